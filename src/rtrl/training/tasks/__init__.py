"""Built-in tasks, generated locally from a seed; ``TASKS`` maps names to task classes (keyword options)."""

from rtrl.training.tasks.adding import Adding
from rtrl.training.tasks.base import Episodes, Task
from rtrl.training.tasks.copy import Copy
from rtrl.training.tasks.evidence import Evidence
from rtrl.training.tasks.evidence_poisson import EvidencePoisson
from rtrl.training.tasks.manifolds import Manifolds
from rtrl.training.tasks.mnist1d import MNIST1D
from rtrl.training.tasks.recall import Recall
from rtrl.training.tasks.shd import SHD
from rtrl.training.tasks.sines import Sines
from rtrl.training.tasks.store_recall import StoreRecall
from rtrl.training.tasks.store_recall_poisson import StoreRecallPoisson
from rtrl.training.tasks.stream import stream_chunk

TASKS: dict[str, type[Task]] = {t.name: t for t in (Copy, Recall, Adding, Sines, MNIST1D, Evidence, StoreRecall,
                                                  Manifolds, EvidencePoisson, StoreRecallPoisson, SHD)}

__all__ = ["MNIST1D", "SHD", "TASKS", "Adding", "Copy", "Episodes", "Evidence", "EvidencePoisson", "Manifolds",
           "Recall", "Sines", "StoreRecall", "StoreRecallPoisson", "Task", "stream_chunk"]
