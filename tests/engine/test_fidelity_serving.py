"""``--json`` rows name the serving figure the text prints (issue 25): a prefill row its
time to first token (``ttft_s``), a decode row its inter-token latency (``itl_s``)."""

from __future__ import annotations

import pytest

from tests.cli_run import run_json

ARGS = ("--model", "llama-3-8b", "--set", "B=2", "--set", "S=1024", "--hardware", "h100-sxm",
        "--json")


@pytest.mark.parametrize("workload,key,other", [("decode", "itl_s", "ttft_s"),
                                                ("prefill", "ttft_s", "itl_s")])
def test_json_rows_name_the_serving_figure(capsys, workload, key, other):
    (row,) = run_json(capsys, "eval", workload, *ARGS)["rows"]
    assert row[key] == row["step_time_s"] > 0 and other not in row
    # the same time the text prints: one step of the batch, tokens/s = tokens / step
    tokens = 2 if workload == "decode" else 2 * 1024
    assert row["tokens_per_s"] == pytest.approx(tokens / row[key], rel=1e-12)


def test_decode_with_a_prompt_has_both(capsys):
    (row,) = run_json(capsys, "eval", "decode", *ARGS, "--prompt", "512")["rows"]
    # the prompts' prefill, as serving runs it: the last position's logits only
    (pre,) = run_json(capsys, "eval", "prefill", *ARGS[:2], "--set", "B=2", "--set", "S=512",
                      *ARGS[6:], "--logits", "last")["rows"]
    assert row["itl_s"] == row["step_time_s"] and row["ttft_s"] == pre["ttft_s"]
