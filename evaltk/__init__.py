"""evaltk: evaluate AI agent runs honestly.

Public names are re-exported here from one flat module per topic; see README's
"Architecture" section for what each module owns.
"""

__version__ = "0.1.0"

from . import scoring, taxonomy, values  # noqa: E402
from .errors import InputError, SchemaViolation, UnreadableInput  # noqa: E402
from .scoring import *  # noqa: E402,F403
from .taxonomy import *  # noqa: E402,F403
from .values import *  # noqa: E402,F403

__all__ = [
    "__version__",
    "InputError",
    "SchemaViolation",
    "UnreadableInput",
    *values.__all__,
    *scoring.__all__,
    *taxonomy.__all__,
]
