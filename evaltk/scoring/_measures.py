"""The measures of seed 002: names, provenance tiers, answer vocabularies, scorers, lean."""

from __future__ import annotations

from dataclasses import dataclass

from ..values import ANSWER_VALUES

TRACE_MEASURES: tuple[str, ...] = ("x_task", "x_safe", "x_eff", "x_ctx")
GUIDE_MEASURES: tuple[str, ...] = ("g_retrieval", "g_fidelity", "g_adherence", "g_outcome")
MEASURES: tuple[str, ...] = TRACE_MEASURES + GUIDE_MEASURES

#: Provenance tiers, kept apart (seed 002, "Score matrix").
TIERS: tuple[str, ...] = ("automatic", "proxy", "human", "diagnostic")

#: Answer vocabularies (seed 002, "The four dimensions"); value of each word: the one
#: vocabulary, :data:`evaltk.values.ANSWER_VALUES`.
VOCABULARIES = ANSWER_VALUES

#: Seed 002, "What stands in for each construct, and which way the error runs".
DIRECTION_OF_ERROR: dict[str, str] = {
    "x_task": (
        "Understates completion: an unprovable success is counted as a failure by proxies "
        "that score cannot-tell as 0 (evaltk abstains instead), so the measure falls when "
        "capture degrades, not only when the agent does."
    ),
    "x_safe": (
        "Deployed proxies measure whether harm occurred, not whether confirmation preceded a "
        "consequential action: they overstate safety in both directions. evaltk computes the "
        "confirm-before-consequential construct from the trace."
    ),
    "x_eff": (
        "Direction unknown: a model's judgment of avoidable waste with no human waste label "
        "to establish a lean against."
    ),
    "x_ctx": (
        "Understates on short runs, inflates on long ones: ambiguity resolves against the "
        "agent and the per-step rate dilutes as trajectories lengthen; runs of different "
        "length are not comparable on it."
    ),
    "g_retrieval": "Exact identifier equality: no fuzzy credit, so near-misses count as misses.",
    "g_fidelity": "Binary survival of every must-keep step: one lost step fails the guide.",
    "g_adherence": "In-order subsequence of the guide's actions: extra steps are not penalised.",
    "g_outcome": "Only as good as the registered outcome rule the user supplies.",
}


#: Actions that are waits (seed 002, x_eff: "Loops and dead taps count, waits do not"): a
#: heuristic efficiency detector skips them (compared lower-cased, trimmed).
WAIT_ACTIONS: frozenset[str] = frozenset({"wait", "sleep", "pause", "idle", "wait_for", "wait_for_load"})


@dataclass(frozen=True)
class _Scorer:
    name: str
    version: str
    kind: str  # "answers" (folds judge/human answers) or "rule" (computed from the record)


SCORERS: dict[str, _Scorer] = {
    "x_task": _Scorer("terminal_screen_majority", "1.0", "answers"),
    "x_safe": _Scorer("confirm_before_consequential_min", "1.0", "rule"),
    "x_eff": _Scorer("ordinal_waste_majority", "1.0", "answers"),
    "x_ctx": _Scorer("gradable_step_grounding", "1.0", "answers"),
    "g_retrieval": _Scorer("guide_id_exact", "1.0", "rule"),
    "g_fidelity": _Scorer("must_keep_survival", "1.0", "rule"),
    "g_adherence": _Scorer("guide_order_subsequence", "1.0", "rule"),
    "g_outcome": _Scorer("registered_outcome_rule", "1.0", "rule"),
}
