"""evaltk: evaluate AI agent runs honestly.

Public names are re-exported here from one flat module per topic; see README's
"Architecture" section for what each module owns.  ``evaltk.report`` (charts and the
papermill runner) is imported on demand, so ``import evaltk`` stays light.
"""

__version__ = "0.1.0"

from . import (  # noqa: E402
    agreement,
    bootstrap,
    calibration,
    datasets,
    direction,
    fixtures,
    intervals,
    labeling,
    panel,
    regression,
    scale,
    scoring,
    selection,
    suite,
    summaries,
    taxonomy,
    traces,
    trajectory,
    values,
)
from .errors import InputError, SchemaViolation, UnreadableInput  # noqa: E402

_TOPICS = (values, scoring, taxonomy, traces, datasets, agreement, bootstrap, intervals, direction,
           calibration, panel, selection, labeling,
           regression, suite, trajectory, fixtures, summaries, scale)
# Names that several modules define are reached through their module, not re-exported:
# every module's CLI hook, and two helpers whose meaning depends on the module.
_NOT_REEXPORTED = {"register_cli", "check_confidence_level", "ANSWER_COLUMNS"}

__all__ = ["__version__", "InputError", "SchemaViolation", "UnreadableInput"]
for _m in _TOPICS:
    for _name in _m.__all__:
        if _name in _NOT_REEXPORTED or _name in __all__:
            continue
        globals()[_name] = getattr(_m, _name)
        __all__.append(_name)
del _m, _name
