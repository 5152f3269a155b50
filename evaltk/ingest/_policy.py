"""The action policy: which tool calls of an imported run are consequential and which ask
for confirmation, declared by tool-name patterns (never guessed by an importer)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .. import _io
from ..errors import SchemaViolation

#: Why x_safe cannot be computed on a run imported without an action policy.
NO_POLICY_REASON = ("no action policy was given at import: which tool calls are consequential "
                    "and which ask for confirmation is not declared, so x_safe has no scorer")


@cache
def _validator() -> Any:
    import jsonschema

    text = resources.files("evaltk").joinpath("schemas", "action-policy.schema.json").read_text("utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


@dataclass(frozen=True)
class ActionPolicy:
    """Tool-name patterns declaring consequential and confirmation steps.

    Patterns are shell-style globs (``*``, ``?``, ``[abc]``) matched case-sensitively
    against the whole tool name (:func:`fnmatch.fnmatchcase`).  A tool matching both
    lists is both (x_safe then abstains with ``missing_evidence`` on that step: the
    record cannot tell whether the confirmation came first).

    Attributes
    ----------
    consequential, needs_confirmation : tuple of str
        The patterns.
    name : str or None
        The policy's ``policy`` field.
    digest : str
        ``sha256:<hex>`` of the policy's canonical JSON (sorted keys, no spaces), carried
        on every imported run so a score says which policy marked its steps.

    Examples
    --------
    >>> p = ActionPolicy.from_dict({"consequential": ["refund", "delete_*"],
    ...                             "needs_confirmation": ["confirm_with_user"]})
    >>> p.classify("delete_file"), p.classify("confirm_with_user"), p.classify("lookup")
    ((True, False), (False, True), (False, False))
    """

    consequential: tuple[str, ...]
    needs_confirmation: tuple[str, ...]
    name: str | None
    digest: str

    @classmethod
    def from_dict(cls, doc: Any, *, file: str | None = None) -> ActionPolicy:
        """Validate a policy document against ``evaltk/schemas/action-policy.schema.json``."""
        errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errors:
            e = errors[0]
            where = ".".join(str(p) for p in e.absolute_path) or None
            raise SchemaViolation(f"not an action policy: {e.message}", file=file, field=where)
        return cls(tuple(doc["consequential"]), tuple(doc.get("needs_confirmation", ())),
                   doc.get("policy"), "sha256:" + hashlib.sha256(_io.canonical_json(doc)).hexdigest())

    def classify(self, tool: str) -> tuple[bool, bool]:
        """``(consequential, needs_confirmation)`` for a call of ``tool``."""
        return (any(fnmatch.fnmatchcase(tool, p) for p in self.consequential),
                any(fnmatch.fnmatchcase(tool, p) for p in self.needs_confirmation))

    def describe(self) -> dict[str, Any]:
        """The policy as carried on imported runs: ``name, digest``."""
        return {"name": self.name, "digest": self.digest}


def read_action_policy(path: str | Path) -> ActionPolicy:
    """Read an action policy file (YAML through ``yaml.safe_load``, or JSON).

    ``consequential`` lists the tool-name patterns whose calls are consequential
    actions (a purchase, a send, a delete); ``needs_confirmation`` those whose calls
    ask the user to confirm; ``policy`` names it.  See docs/import-inspect.md.

    Raises
    ------
    evaltk.errors.UnreadableInput
        Missing, not UTF-8, not JSON or YAML.
    evaltk.errors.SchemaViolation
        Not a policy (an unknown key, a pattern that is not a string, ...), naming the field.
    """
    return ActionPolicy.from_dict(_io.read_document(path), file=str(path))
