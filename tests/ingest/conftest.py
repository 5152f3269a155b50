"""Session fixtures: real inspect_ai logs and OpenTelemetry spans, written once per test
session by the real tools (tests/ingest/make_inputs.py), offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ingest import make_inputs


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory) -> dict[str, Path]:
    """``{"eval": ..., "json": ...}``: one run of the scripted refund task on mockllm/model."""
    pytest.importorskip("inspect_ai", reason="the inspect extra (inspect_ai) is not installed: "
                                            "pip install 'evaltk[inspect]'")
    return make_inputs.write_inspect_logs(tmp_path_factory.mktemp("inspect"))


@pytest.fixture(scope="session")
def otel_spans(tmp_path_factory) -> dict[str, Path]:
    """``{"jsonl": ..., "otlp": ..., "protobuf": ...}``: three traces from the opentelemetry-sdk."""
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra (opentelemetry-sdk) is not installed: "
                                                   "pip install 'evaltk[otel]'")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.common",
                        reason="opentelemetry-exporter-otlp-proto-common (the otel extra) is not installed")
    return make_inputs.write_otel_spans(tmp_path_factory.mktemp("otel"))


@pytest.fixture(scope="session")
def policy_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("policy") / "policy.yaml"
    p.write_text("policy: refunds-v1\nconsequential: [refund, cancel_*]\nneeds_confirmation: [confirm_with_user]\n",
                 encoding="utf-8")
    return p
