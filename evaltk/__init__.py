"""evaltk: evaluate AI agent runs honestly.

Public names are re-exported here from one flat module per topic; see README's
"Architecture" section for what each module owns.
"""

from . import values
from .errors import InputError, SchemaViolation, UnreadableInput
from .values import *  # noqa: F403

__version__ = "0.1.0"

__all__ = ["__version__", "InputError", "SchemaViolation", "UnreadableInput", *values.__all__]
