"""The action policy (issue #18): tool-name patterns -> consequential / needs_confirmation,
declared in a file (YAML through the safe loader, or JSON) and never guessed."""

from __future__ import annotations

import json

import pytest

from evaltk.cli import main
from evaltk.errors import SchemaViolation, UnreadableInput
from evaltk.ingest import ActionPolicy, read_action_policy


def test_patterns_are_globs_on_the_whole_tool_name(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("consequential: ['delete_*', refund]\nneeds_confirmation: [ask_user]\n")
    pol = read_action_policy(p)
    assert pol.classify("delete_file") == (True, False)
    assert pol.classify("refund") == (True, False)
    assert pol.classify("refund_status") == (False, False)  # the whole name, not a prefix
    assert pol.classify("Refund") == (False, False)  # case-sensitive
    assert pol.classify("ask_user") == (False, True)
    assert pol.name is None


def test_yaml_and_json_give_the_same_policy_and_digest(tmp_path):
    y, j = tmp_path / "p.yaml", tmp_path / "p.json"
    y.write_text("policy: v1\nconsequential: [refund]\n")
    j.write_text(json.dumps({"consequential": ["refund"], "policy": "v1"}))
    assert read_action_policy(y) == read_action_policy(j)
    other = ActionPolicy.from_dict({"policy": "v1", "consequential": ["refund", "send_*"]})
    assert other.digest != read_action_policy(y).digest and other.digest.startswith("sha256:")


@pytest.mark.parametrize("text, field", [
    ("needs_confirmation: [ask]\n", None),  # consequential is required
    ("consequential: [refund]\nconsequental: [x]\n", None),  # an unknown key is refused, not ignored
    ("consequential: [1]\n", "consequential.0"),
    ("consequential: refund\n", "consequential"),
    ("consequential: ['']\n", "consequential.0"),
])
def test_a_file_that_is_not_a_policy_names_the_field(tmp_path, text, field):
    p = tmp_path / "p.yaml"
    p.write_text(text)
    with pytest.raises(SchemaViolation) as e:
        read_action_policy(p)
    assert e.value.file == str(p) and e.value.field == field


def test_yaml_is_read_with_the_safe_loader(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("consequential: !!python/object/apply:os.system ['echo hacked']\n")
    with pytest.raises(UnreadableInput):
        read_action_policy(p)


def test_cli_exit_codes_for_a_bad_policy(tmp_path, capsys):
    spans = tmp_path / "s.jsonl"
    spans.write_text("")
    bad = tmp_path / "p.yaml"
    bad.write_text("consequential: [1]\n")
    assert main(["import", "otel", str(spans), "--policy", str(bad), "--out", str(tmp_path / "o")]) == 65
    assert "p.yaml" in capsys.readouterr().err
    assert main(["import", "otel", str(spans), "--policy", str(tmp_path / "none.yaml"),
                 "--out", str(tmp_path / "o")]) == 66
