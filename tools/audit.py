"""A hostile audit of the ``rtrl`` command line and Python API: every case a bad (or odd) input a new user might try,
classified by how the project answers it.

Classes (the issue-22 audit's):

- ``clear``: refused with exit status 2 (CLI) or a ``ValueError`` / ``TypeError`` (API) whose message is at most
  a few lines and names what was wrong (each case lists the words it must contain); or, for a case whose input is
  acceptable, accepted.
- ``poor``: refused, but the message misses the expected word, is long, exits with another status, or leaves a
  half-made file or folder behind; or an acceptable input refused.
- ``traceback``: a Python traceback on stderr, an API exception that is not ``ValueError`` / ``TypeError``, or a
  message from deep inside JAX / XLA.
- ``silent``: accepted when it should have been refused, or refused with no message.
- ``lost``: a file of an existing run folder changed (a refused case) or disappeared / lost records (any case).
- ``hang``: past the per-case timeout.

The cases are data (``tools/audit_cases.py``). CLI cases run as ``python -m rtrl ...`` subprocesses, each in a
temporary folder holding copies of tiny template runs; all API cases run in one Python process. Run it outside
``make test``::

    python tools/audit.py [--repo PATH] [--only PATTERN] [--jobs 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import audit_cases  # noqa: E402  (the cases sit beside this script)

CLASSES = ("clear", "poor", "traceback", "silent", "lost", "hang")
DEEP = ("dot_general", "scan got", "scan body", "broadcast", "XlaRuntimeError", "RESOURCE_EXHAUSTED", "jaxlib",
        "TracerBoolConversionError", "ConcretizationTypeError", "Traceback (most recent call last)",
        "incompatible shapes", "add got incompatible", "UnexpectedTracerError", "jacrev", "custom_vjp",
        "pjit", "gather op")
MAX_LINES = 3
TIMEOUT = 120


# -- running the command line ----------------------------------------------------------------------------------------
def base_env(repo: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(repo / "src")
    env.setdefault("JAX_PLATFORMS", "cpu")
    # faster compiles, same programs (as the test suite does)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()
    env["MPLBACKEND"] = "Agg"
    return env


def rtrl(args: list[str], cwd: Path, env: dict, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(["nice", "-n", "10", sys.executable, "-m", "rtrl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def make_templates(repo: Path, where: Path) -> dict[str, Path]:
    """Tiny finished runs to copy into each case: a train run, a sequence-method train run and an RL run."""
    env = base_env(repo)
    commands = {
        "run": "train --steps 2 --hidden 4 --batch 2 --eval-size 4 --out run --quiet",
        "run8": "train --steps 2 --hidden 8 --batch 2 --eval-size 4 --out run8 --quiet",
        "bptt": "train --method bptt --task-arg max_length=2 --steps 8 --hidden 4 --batch 2 --eval-size 4 "
                "--out bptt --quiet",
        "rl": "rl --steps 4 --hidden 4 --envs 2 --record-every 2 --out rl --quiet",
        "gym": "rl --env gymnasium:CartPole-v1 --steps 4 --hidden 4 --envs 2 --record-every 2 --out gym --quiet",
        "net": "train --cell rtrl.cells.network:lru_network --steps 2 --hidden 4 --batch 2 --eval-size 4 --out net "
               "--quiet",
    }
    for name, line in commands.items():
        done = rtrl(shlex.split(line), where, env, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"audit: could not make the template run {name!r}: {done.stderr[-2000:]}")
    return {name: where / name for name in commands}


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> sha256 of its bytes)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def damage(folder: Path, edit: tuple, templates: dict[str, Path]) -> None:
    """Apply one edit of a case to a copied run folder (see ``audit_cases`` for the operations)."""
    op, *args = edit
    if op == "config":  # set (or with value DELETE, remove) keys of config.json
        data = json.loads((folder / "config.json").read_text())
        for key, value in args[0].items():
            if value == audit_cases.DELETE:
                data.pop(key, None)
            else:
                data[key] = value
        (folder / "config.json").write_text(json.dumps(data, indent=2))
    elif op == "write":  # replace a file's text
        (folder / args[0]).write_text(args[1])
    elif op == "append":
        with open(folder / args[0], "a") as f:
            f.write(args[1])
    elif op == "truncate":  # keep the first n bytes
        path = folder / args[0]
        path.write_bytes(path.read_bytes()[: args[1]])
    elif op == "remove":
        target = folder / args[0]
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    elif op == "copy_from":  # a file of another template run
        shutil.copy(templates[args[1]] / args[0], folder / args[0])
    elif op == "mkdir":
        (folder / args[0]).mkdir()
    elif op == "symlink":  # the file replaced by a link to target (relative to the folder)
        (folder / args[0]).unlink(missing_ok=True)
        (folder / args[0]).symlink_to(args[1])
    elif op == "fifo":  # the file replaced by a named pipe
        (folder / args[0]).unlink(missing_ok=True)
        os.mkfifo(folder / args[0])
    elif op == "duplicate_last":  # the last line written twice
        lines = (folder / args[0]).read_text().splitlines(keepends=True)
        (folder / args[0]).write_text("".join(lines + lines[-1:]))
    elif op == "reverse":  # the lines in reverse order
        lines = (folder / args[0]).read_text().splitlines(keepends=True)
        (folder / args[0]).write_text("".join(reversed(lines)))
    elif op == "chmod":
        os.chmod(folder / args[0] if args[0] else folder, args[1])
    else:
        raise ValueError(f"unknown edit {op!r}")


def record_step(line: bytes) -> int | None:
    """The step of a metrics.jsonl line, None for a torn or foreign line (which a resume may drop)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record.get("step") if isinstance(record, dict) and isinstance(record.get("step"), int) else None


def metrics_kept(before: dict, after: dict, folder: Path, old_metrics: bytes | None, rewinds: int | None) -> list[str]:
    """Files lost by an accepted case: removed ones, and metrics.jsonl records rewritten away (torn lines and, with
    ``rewinds``, records after that step (past the checkpoint) may go)."""
    lost = [name for name in before if name not in after and name != ".lock"]
    if old_metrics is not None and (folder / "metrics.jsonl").exists():
        new = (folder / "metrics.jsonl").read_bytes()
        old_lines = [line for line in old_metrics.splitlines() if record_step(line) is not None
                     and (rewinds is None or record_step(line) <= rewinds)]
        new_lines = new.splitlines()
        if any(line not in new_lines for line in old_lines):
            lost.append("metrics.jsonl (records)")
    return lost


def message_class(text: str, words: str, refused_ok_status: bool, expected: int = 2) -> tuple[str, str]:
    """Class and reason of a refusal from its message."""
    if not text.strip():
        return "silent", "refused with no message"
    if any(d.lower() in text.lower() for d in DEEP):
        return "traceback", "deep JAX/XLA message or traceback"
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if len(lines) > MAX_LINES:
        return "poor", f"{len(lines)} lines"
    if words and not any(w.lower() in text.lower() for w in words.split("|")):
        return "poor", f"does not name {words!r}"
    if not refused_ok_status:
        return "poor", f"exit status is not {expected}"
    return "clear", ""


def run_cli_case(case: dict, repo: Path, templates: dict[str, Path], keep: bool = False) -> dict:
    work = Path(tempfile.mkdtemp(prefix="audit-"))
    try:
        folders = {}
        for name, template in case.get("folders", {}).items():
            shutil.copytree(templates[template], work / name)
            folders[name] = work / name
        for name, text in case.get("files", {}).items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_text(text)
        for name in case.get("dirs", ()):
            (work / name).mkdir(parents=True, exist_ok=True)
        for name in case.get("fifos", ()):
            os.mkfifo(work / name)
        for folder, edit in case.get("edits", ()):
            damage(work / folder, edit, templates)
        env = base_env(repo)
        env.update(case.get("env", {}))
        before_paths = {str(p.relative_to(work)) for p in work.rglob("*")}
        before = {name: snapshot(path) for name, path in folders.items()}
        old_metrics = {name: (path / "metrics.jsonl").read_bytes() if (path / "metrics.jsonl").exists() else None
                       for name, path in folders.items()}
        start = time.monotonic()
        try:
            done = rtrl(case["argv"], work, env, timeout=case.get("timeout", TIMEOUT))
        except subprocess.TimeoutExpired as e:
            err = (e.stderr or b"").decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            return result(case, "hang", f"timeout after {case.get('timeout', TIMEOUT)} s", err, None,
                          time.monotonic() - start)
        seconds = time.monotonic() - start
        for path in folders.values():  # undo chmod edits so the snapshot and clean-up can read it
            for p in [path, *path.rglob("*")]:
                if not p.is_symlink():
                    os.chmod(p, 0o755 if p.is_dir() else 0o644)
        after = {name: snapshot(path) for name, path in folders.items()}
        refuse = case["expect"] == "refuse"
        lost = []
        for name in folders:
            if refuse:
                lost += [f"{name}/{f}" for f in before[name] if f != ".lock" and after[name].get(f) != before[name][f]]
            elif not case.get("replaces"):  # --overwrite: replacing the run is what was asked
                lost += [f"{name}/{f}" for f in metrics_kept(before[name], after[name], folders[name],
                                                             old_metrics[name], case.get("rewinds"))]
        err, out = done.stderr, done.stdout
        imported = [name for name in case.get("absent", ()) if (work / name).exists()]
        if imported:
            return result(case, "silent", "made " + ", ".join(imported) + " (code the user did not name ran)", err,
                          done.returncode, seconds)
        if lost:
            return result(case, "lost", "changed or lost: " + ", ".join(lost), err, done.returncode, seconds)
        if "Traceback (most recent call last)" in err or done.returncode < 0:
            return result(case, "traceback", f"status {done.returncode}", err, done.returncode, seconds)
        if refuse:
            if done.returncode == 0:
                return result(case, "silent", "exit status 0", err or out, 0, seconds)
            expected = case.get("status", 2)  # a refusal's; a run that fails mid-way says 1
            cls, why = message_class(err, case.get("words", ""), done.returncode == expected, expected)
            new = sorted({str(p.relative_to(work)) for p in work.rglob("*")} - before_paths)
            new = [p for p in new if not p.startswith("__pycache__")]
            if cls == "clear" and new and not case.get("keeps"):  # keeps: the run folder a failure keeps
                cls, why = "poor", "left behind: " + ", ".join(new[:4])
            return result(case, cls, why, err, done.returncode, seconds)
        if done.returncode != 0:
            cls, why = message_class(err, "", True)
            return result(case, "traceback" if cls == "traceback" else "poor",
                          f"acceptable input refused (status {done.returncode})", err, done.returncode, seconds)
        return result(case, "clear", "accepted (as it should be)", err or out, 0, seconds)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def last_line(text: str) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def result(case: dict, cls: str, why: str, err: str, status, seconds: float) -> dict:
    what = case.get("cmd", case.get("code", ""))
    return {"id": case["id"], "kind": case["kind"], "command": case["command"], "fix": case.get("fix", ""),
            "input": what,
            "class": cls, "why": why, "status": status, "last": last_line(err), "seconds": round(seconds, 1)}


# -- the API cases, all in one process ---------------------------------------------------------------------------------
def run_api_cases(cases: list[dict], repo: Path) -> list[dict]:
    """Run the API cases in one child process (``--api-worker``) and read back its results."""
    if not cases:
        return []
    env = base_env(repo)
    ids = [c["id"] for c in cases]
    with tempfile.TemporaryDirectory(prefix="audit-api-") as work:
        out = Path(work) / "results.json"
        try:
            done = subprocess.run(["nice", "-n", "10", sys.executable, str(Path(__file__).resolve()), "--api-worker",
                                   str(out), *ids], cwd=work, env=env, capture_output=True, text=True,
                                  timeout=60 * len(cases))
        except subprocess.TimeoutExpired:
            done = None
        if not out.exists():
            tail = last_line(done.stderr) if done else "the API worker timed out"
            return [result(c, "hang" if done is None else "traceback", "API worker died: " + tail, "", None, 0)
                    for c in cases]
        return json.loads(out.read_text())


def api_worker(out: str, ids: list[str]) -> None:
    """In the child: run each API case (in its own namespace, with an alarm as its timeout), classify in-process,
    and write every result after each case (a crash loses only the cases after it)."""
    import signal
    import traceback

    class Hang(Exception):
        pass

    def alarm(signum, frame):
        raise Hang()

    signal.signal(signal.SIGALRM, alarm)
    setup_ns: dict = {}
    exec(audit_cases.API_SETUP, setup_ns)
    wanted = set(ids)
    results = []
    for case in [c for c in all_cases() if c["kind"] == "api" and c["id"] in wanted]:
        ns = dict(setup_ns)
        start = time.monotonic()
        signal.alarm(case.get("timeout", 60))
        try:
            exec(case["code"], ns)
            error = None
        except Hang:
            error = "hang"
        except BaseException as e:  # noqa: BLE001 - every escape is what we classify
            error = e
        finally:
            signal.alarm(0)
        seconds = time.monotonic() - start
        if error == "hang":
            results.append(result(case, "hang", "timeout", "", None, seconds))
        elif error is None:
            cls = "silent" if case["expect"] == "refuse" else "clear"
            results.append(result(case, cls, "no exception" if cls == "silent" else "accepted (as it should be)",
                                  "", None, seconds))
        else:
            text = f"{type(error).__name__}: {error}"
            if not isinstance(error, (ValueError, TypeError)):
                tb = traceback.extract_tb(error.__traceback__)
                where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
                results.append(result(case, "traceback", f"{type(error).__name__}{where}", text, None, seconds))
            elif case["expect"] != "refuse":
                cls, why = message_class(str(error), "", True)
                results.append(result(case, "traceback" if cls == "traceback" else "poor",
                                      "acceptable input refused", text, None, seconds))
            else:
                cls, why = message_class(str(error), case.get("words", ""), True)
                results.append(result(case, cls, why, text, None, seconds))
        Path(out).write_text(json.dumps(results))


# -- the cases and the report ------------------------------------------------------------------------------------------
def all_cases() -> list[dict]:
    cases = []
    for case in audit_cases.CLI:
        argv = shlex.split(case["cmd"])
        command = argv[0] if argv and argv[0] in audit_cases.COMMANDS else "(top level)"
        cases.append({**case, "kind": "cli", "argv": argv, "command": command})
    for case in audit_cases.API:
        cases.append({**case, "kind": "api", "command": case.get("command", "api")})
    seen = set()
    for case in cases:
        if case["id"] in seen:
            raise SystemExit(f"audit: duplicate case id {case['id']!r}")
        seen.add(case["id"])
    return cases


def report(results: list[dict], seconds: float) -> str:
    lines = []
    totals = {c: sum(r["class"] == c for r in results) for c in CLASSES}
    lines.append(f"{len(results)} cases in {seconds:.0f} s: " + ", ".join(f"{n} {c}" for c, n in totals.items()))
    commands = sorted({r["command"] for r in results})
    lines.append("")
    lines.append(f"{'command':<18}" + "".join(f"{c:>10}" for c in CLASSES) + f"{'total':>8}")
    for command in commands:
        rows = [r for r in results if r["command"] == command]
        lines.append(f"{command:<18}" + "".join(f"{sum(r['class'] == c for r in rows):>10}" for c in CLASSES)
                     + f"{len(rows):>8}")
    bad = [r for r in results if r["class"] != "clear"]
    if bad:
        lines.append("")
        lines.append("not clear:")
        for r in sorted(bad, key=lambda r: (CLASSES.index(r["class"]), r["id"])):
            lines.append(f"  [{r['class']}] {r['id']} ({r['why']}): {r['last']}")
    return "\n".join(lines)


def findings(results: list[dict]) -> str:
    """Markdown: the cases that are not clear, by class and then by the module that should answer them."""
    lines = ["# Audit findings", "", report_counts(results), ""]
    for cls in CLASSES[1:]:
        rows = [r for r in results if r["class"] == cls]
        if not rows:
            continue
        lines += [f"## {cls} ({len(rows)})", ""]
        for fix in sorted({r["fix"] for r in rows}):
            lines += [f"### {fix or '(unassigned)'}", ""]
            for r in [r for r in rows if r["fix"] == fix]:
                what = r.get("input", "")
                lines.append(f"- `{r['id']}` `{what}`: {r['why']}; `{r['last']}`")
            lines.append("")
    return "\n".join(lines)


def report_counts(results: list[dict]) -> str:
    return f"{len(results)} cases: " + ", ".join(f"{sum(r['class'] == c for r in results)} {c}" for c in CLASSES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a hostile audit of the rtrl command line and API")
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="the repository whose src to test")
    parser.add_argument("--only", default=None,
                        help="run only the cases whose id matches one of these globs or substrings (comma-separated)")
    parser.add_argument("--jobs", type=int, default=2, help="CLI cases run at once (default 2)")
    parser.add_argument("--json", type=Path, default=None, help="write the per-case results here")
    parser.add_argument("--findings", type=Path, default=None, help="write the cases that are not clear here "
                        "(markdown, by class and by the module that should answer them)")
    parser.add_argument("--keep", action="store_true", help="keep each CLI case's temporary folder (debugging)")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    if not (repo / "src" / "rtrl").is_dir():
        parser.error(f"--repo must be a repository with src/rtrl, got {args.repo}")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    cases = all_cases()
    if args.only:  # globs or substrings, comma-separated
        patterns = [p if any(ch in p for ch in "*?[") else f"*{p}*" for p in args.only.split(",")]
        cases = [c for c in cases if any(fnmatch.fnmatch(c["id"], p) for p in patterns)]
    start = time.monotonic()
    cli = [c for c in cases if c["kind"] == "cli"]
    api = [c for c in cases if c["kind"] == "api"]
    results = []
    with tempfile.TemporaryDirectory(prefix="audit-templates-") as where:
        templates = make_templates(repo, Path(where)) if any(c.get("folders") for c in cli) else {}
        print(f"templates ready in {time.monotonic() - start:.0f} s; {len(cli)} CLI and {len(api)} API cases",
              file=sys.stderr, flush=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            api_future = pool.submit(run_api_cases, api, repo)
            futures = [pool.submit(run_cli_case, c, repo, templates, args.keep) for c in cli]
            for n, future in enumerate(concurrent.futures.as_completed(futures), 1):
                r = future.result()
                results.append(r)
                if r["class"] != "clear":
                    print(f"  [{r['class']}] {r['id']}: {r['last']}", file=sys.stderr, flush=True)
                if n % 25 == 0:
                    print(f"  {n}/{len(cli)} CLI cases, {time.monotonic() - start:.0f} s", file=sys.stderr,
                          flush=True)
            results += api_future.result()
    seconds = time.monotonic() - start
    order = {c["id"]: i for i, c in enumerate(cases)}
    results.sort(key=lambda r: order[r["id"]])
    print(report(results, seconds))
    if args.json:
        args.json.write_text(json.dumps({"seconds": round(seconds), "repo": str(repo), "results": results},
                                        indent=1) + "\n")
    if args.findings:
        args.findings.write_text(findings(results) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--api-worker":
        api_worker(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(main())
