"""Built-in tasks, generated locally from a seed; ``TASKS`` maps names to task classes (keyword options)."""

from rtrl.tasks.adding import Adding
from rtrl.tasks.base import Episodes, Task
from rtrl.tasks.copy import Copy
from rtrl.tasks.mnist1d import MNIST1D
from rtrl.tasks.recall import Recall
from rtrl.tasks.sines import Sines
from rtrl.tasks.stream import stream_chunk

TASKS: dict[str, type[Task]] = {t.name: t for t in (Copy, Recall, Adding, Sines, MNIST1D)}

__all__ = ["MNIST1D", "TASKS", "Adding", "Copy", "Episodes", "Recall", "Sines", "Task", "stream_chunk"]
