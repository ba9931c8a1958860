"""``symroof crossovers``: a hybrid model's crossovers from the command line, against a
golden output (tests/golden/crossovers/; regenerate with ``--update-golden`` and review the
diff), its JSON numbers against a second computation from the decode graphs, and bad
input as one line naming the option."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy as sp

from cli_run import run_error, run_json
from symroof.atlas.hybrid import all_attention
from symroof.cli import main
from symroof.models import from_hf_config
from symroof.symbols import B, S, b
from symroof.workloads.transformer import decode

CONFIG = str(Path(__file__).parents[1] / "fixtures" / "hybrid_configs"
             / "nemotron-h-8b-base-8k.json")
GOLDEN = Path(__file__).parents[1] / "golden" / "crossovers"


@pytest.mark.parametrize("name, argv", [
    ("nemotron-h-8b_h100-sxm_B=8_S=8192.txt",
     ["--hardware", "h100-sxm", "--set", "B=8", "--set", "S=8192"]),
    ("nemotron-h-8b_symbolic.txt", []),
])
def test_golden(capsys, update_golden, name, argv):
    assert main(["crossovers", "--model", CONFIG, *argv]) == 0
    got = capsys.readouterr().out.replace(CONFIG, "CONFIG")
    path = GOLDEN / name
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
    assert got == path.read_text()


def test_json_numbers_against_the_decode_graphs(capsys):
    doc = run_json(capsys, "crossovers", "--model", CONFIG, "--hardware", "h100-sxm",
                   "--set", "B=8", "--set", "S=8192")
    m = from_hf_config(CONFIG)
    # state vs KV: the recurrent states of one sequence over its K and V per token
    (x,) = doc["state_vs_kv"]
    assert sp.Rational(x["number"]) == m.state_bytes_per_sequence / m.kv_bytes_per_token
    # decode bytes: at the printed S (B = 8) both decode steps move the same bytes
    (y,) = doc["decode_bytes"]
    parsed = sp.sympify(y["formula"])   # our own JSON, not user text
    s_star = parsed.subs({x: 8 for x in parsed.free_symbols if x.name == "B"})
    assert abs(float(s_star) - y["at"]) < 1e-9 * float(s_star)
    mine = decode(m, 8, context=S, logits="none").bytes.subs(b, 2)
    other = decode(all_attention(m), 8, context=S, logits="none").bytes.subs(b, 2)
    assert sp.cancel((mine - other).subs(S, s_star)) == 0
    # the intensity limit at S = 8192, against the decode step's per-sequence F / Q
    f = decode(m, B, context=8192, logits="none")
    per_seq = (sp.diff(f.flops, B) / sp.diff(f.bytes, B)).subs(b, 2)
    assert abs(doc["decode_intensity"]["hybrid"]["at"] - float(per_seq)) < 1e-9 * float(per_seq)
    assert doc["ridge"] == pytest.approx(19788 / 67)
    assert doc["chunk"][0]["number"] == pytest.approx(442883 / 603)


@pytest.mark.parametrize("argv, needle", [
    (["--model", "llama-3-8b"], "--model llama-3-8b: expected a hybrid model"),
    (["--model", CONFIG, "--set", "B=1,2"], "--set B: crossovers takes one value"),
    (["--model", CONFIG, "--set", "X=3"], "'X' is an unknown symbol"),
    (["--model", CONFIG, "--set", "S=-1"], "--set S: expected a positive integer"),
    (["--model", CONFIG, "--precision", "fp8"], "--precision fp8: sets b and the ridge"),
    (["--model", CONFIG, "--hardware", "nochip"], "unknown hardware 'nochip'"),
    (["--model", CONFIG, "--json", "--format", "latex"], "--format latex: --json"),
    (["--hardware", "h100-sxm"], "--model"),
])
def test_bad_input_is_one_line(capsys, argv, needle):
    assert needle in run_error(capsys, "crossovers", *argv)


def test_a_model_without_mamba2_layers_has_no_chunk_crossover(capsys, tmp_path):
    """MiniMax (lightning attention, the recorded tiny config): decode bytes, state vs KV
    and the intensity limits, no chunk crossover (no Mamba-2 scan); state vs KV is the
    lightning states (2 layers x 4 heads x 16 x 16) over K and V per token (1 layer x 2
    x 2 heads x 16)."""
    import json
    data = json.loads((Path(__file__).parents[1] / "fixtures" / "hybrid_flops.json").read_text())
    cfg = next(e["config"] for e in data["entries"] if e["model"] == "minimax")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, "model_type": "minimax"}))
    doc = run_json(capsys, "crossovers", "--model", str(path))
    assert doc["chunk"] is None and doc["recurrent_layers"] == 2
    (x,) = doc["state_vs_kv"]
    assert sp.Rational(x["number"]) == sp.Rational(2 * 4 * 16 * 16, 1 * 2 * 2 * 16)


def test_a_model_without_attention_has_no_attention_crossovers(capsys, tmp_path):
    """A Mamba-1 LM: no K and V and no attention widths (its attention fields are
    placeholders), so no decode-bytes or state-vs-KV crossover and no all-attention
    intensity; its own intensity limit is a number (the per-sequence work and state)."""
    import json
    from symroof.atlas.hybrid import decode_bytes, state_vs_kv
    data = json.loads((Path(__file__).parents[1] / "fixtures" / "hybrid_flops.json").read_text())
    cfg = next(e["config"] for e in data["entries"] if e["model"] == "mamba")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, "model_type": "mamba"}))
    assert main(["crossovers", "--model", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("none: no attention layers") == 2 and "all-attention: I" not in out
    m = from_hf_config(str(path))
    for found in (decode_bytes(m), state_vs_kv(m)):
        assert found == [] and "no attention layers" in found.reason


def test_many_experts_take_the_expert_reads_option(capsys, tmp_path):
    """A hybrid mixture of 256 experts (the recorded tiny Kimi-Linear, its experts set to
    Kimi-Linear-48B's 256 top-8): the expected reads' limit as B grows is beyond the
    solver, and the error names ``--expert-reads``; with ``all`` (every expert read, the
    same limit as B grows) the intensity limit is the per-sequence F/Q of the decode
    graph with every expert read, computed here from the graph."""
    import json
    data = json.loads((Path(__file__).parents[1] / "fixtures" / "hybrid_flops.json").read_text())
    cfg = next(e["config"] for e in data["entries"] if e["model"] == "kimi_linear")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, "model_type": "kimi_linear", "num_experts": 256,
                                "num_experts_per_token": 8}))
    assert "--expert-reads all|active" in run_error(capsys, "crossovers", "--model", str(path))
    doc = run_json(capsys, "crossovers", "--model", str(path), "--expert-reads", "all")
    m = from_hf_config(str(path))
    f = decode(m, B, context=S, logits="none", expert_reads="all")
    per_seq = sp.diff(f.flops, B) / sp.diff(f.bytes, B)
    got = doc["decode_intensity"]["hybrid"]["formula"]
    assert sp.cancel(sp.sympify(got, locals={"S": S, "b": b}) - per_seq) == 0  # our own JSON
