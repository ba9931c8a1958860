"""Closed-form FLOP counts matching ``torch.utils.flop_counter.FlopCounterMode``.

Pure Python (no torch import).  Every function returns an ``int``; the unit is
the counter's: a matmul ``(M x K) @ (K x N)`` is ``2*M*N*K`` FLOPs, batched
matmuls multiply by the batch, bias adds / norms / softmax / activations /
rotary elementwise math / residual adds are *not* counted.

Notation: ``B`` batch, ``Sq`` new tokens per sequence (``seq`` in prefill, 1 in
decode), ``T = B*Sq`` tokens through every linear layer, ``L`` attention key
length (``seq`` in prefill, ``past + 1`` in decode), ``H`` query heads,
``G`` KV heads, ``hd`` head dim.
"""

from __future__ import annotations


def matmul(m: int, n: int, k: int, batch: int = 1) -> int:
    """FLOPs the counter charges for ``batch`` products of (m x k) @ (k x n)."""
    return 2 * batch * m * n * k


def attention_core(batch: int, heads: int, q_len: int, kv_len: int, head_dim: int) -> int:
    """Eager attention: QK^T plus PV, both over all ``heads`` (GQA K/V are
    expanded by ``repeat_kv`` before the matmul) and the full, unmasked
    ``q_len x kv_len`` rectangle (the causal mask is an add, not a skip)."""
    return matmul(q_len, kv_len, head_dim, batch * heads) + matmul(q_len, head_dim, kv_len, batch * heads)


def _shape(entry: dict) -> tuple[int, int, int]:
    """(B, Sq, L) for a fixture entry."""
    b = entry["batch"]
    if entry["phase"] in ("prefill", "train"):
        return b, entry["seq"], entry["seq"]
    if entry["phase"] == "decode":
        return b, 1, entry["past"] + 1
    raise ValueError(f"unknown phase {entry['phase']!r}")


# First transformers release whose Llama rotary embedding builds its frequency
# table with a broadcast multiply instead of a matmul (5.14.1 still used ``@``).
ROTARY_BROADCAST_SINCE = (5, 15, 0)


def _version_tuple(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) from a version string; pre-release tags ignored."""
    parts: list[int] = []
    for piece in version.split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if digits != piece:
            break
    parts += [0] * (3 - len(parts))
    return (parts[0], parts[1], parts[2])


def rotary_is_matmul(transformers_version: str | None) -> bool:
    """Whether Llama's rotary frequency table is an ``aten.bmm`` in this version.

    ``None`` means "current behaviour" (broadcast multiply, no FLOPs).
    """
    if transformers_version is None:
        return False
    return _version_tuple(transformers_version) < ROTARY_BROADCAST_SINCE


def rotary_flops(
    config: dict,
    q_len: int,
    transformers_version: str | None = None,
    position_batch: int = 1,
) -> int:
    """FLOPs charged for the rotary-embedding frequency table (once per forward,
    not per layer; the cos/sin and q*cos + rotate_half(q)*sin are elementwise: 0).

    transformers >= 5.15 builds ``freqs = position_ids[..., None] * inv_freq``
    (broadcast multiply): not a matmul, so 0.  transformers 4.x and 5.0-5.14
    compute ``inv_freq[None, :, None].expand(P, -1, 1) @ position_ids[:, None, :]``:
    an ``aten.bmm`` of P x (hd/2 x 1) @ (1 x Sq) = ``P * hd * Sq`` FLOPs, where
    P = position_ids batch = 1 when position_ids is not passed (the model builds
    ``arange(...).unsqueeze(0)``), so it does NOT scale with the batch.
    """
    if not rotary_is_matmul(transformers_version):
        return 0
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return matmul(head_dim // 2, q_len, 1, batch=position_batch)


def llama_flops(config: dict, batch: int, q_len: int, kv_len: int, transformers_version: str | None = None) -> int:
    """LlamaForCausalLM forward, eager attention, logits for every new token."""
    d = config["hidden_size"]
    h = config["num_attention_heads"]
    g = config["num_key_value_heads"]
    hd = config.get("head_dim") or d // h
    ff = config["intermediate_size"]
    n_layers = config["num_hidden_layers"]
    vocab = config["vocab_size"]
    t = batch * q_len

    per_layer = (
        matmul(t, h * hd + 2 * g * hd, d)  # q_proj, k_proj, v_proj
        + matmul(t, d, h * hd)  # o_proj
        + attention_core(batch, h, q_len, kv_len, hd)  # QK^T, PV
        + matmul(t, 2 * ff, d)  # gate_proj, up_proj
        + matmul(t, d, ff)  # down_proj
    )
    lm_head = matmul(t, vocab, d)  # every new position (logits_to_keep=0)
    return n_layers * per_layer + lm_head + rotary_flops(config, q_len, transformers_version)


def gpt2_flops(config: dict, batch: int, q_len: int, kv_len: int, transformers_version: str | None = None) -> int:
    """GPT2LMHeadModel forward, eager attention.  Conv1D layers are
    ``torch.addmm(bias, x, W)``: the counter charges 2*M*N*K (bias free);
    learned position embeddings are a lookup (0 FLOPs)."""
    d = config["n_embd"]
    h = config["n_head"]
    hd = d // h
    ff = config.get("n_inner") or 4 * d
    n_layers = config["n_layer"]
    vocab = config["vocab_size"]
    t = batch * q_len

    per_layer = (
        matmul(t, 3 * d, d)  # attn.c_attn (fused QKV)
        + attention_core(batch, h, q_len, kv_len, hd)
        + matmul(t, d, d)  # attn.c_proj
        + matmul(t, ff, d)  # mlp.c_fc
        + matmul(t, d, ff)  # mlp.c_proj
    )
    lm_head = matmul(t, vocab, d)  # nn.Linear, no bias -> aten.mm
    return n_layers * per_layer + lm_head


# ---------------------------------------------------------------------------
# the newer families (issue 12): windows, latent attention, shared experts


def layer_windows(config: dict) -> list:
    """Per layer: None (full attention) or the window W, as transformers 5.24 builds them
    (``config.to_dict()`` spells ``layer_types`` out for the families that alternate)."""
    n = config["num_hidden_layers"]
    types = config.get("layer_types")
    window = config.get("sliding_window")
    if types:
        return [window if t == "sliding_attention" else None for t in types]
    return [window] * n if window else [None] * n


def moe_layers(config: dict) -> set:
    """Indices of the layers with a mixture of experts (the rest have a dense MLP)."""
    kind, n = config["model_type"], config["num_hidden_layers"]
    if kind in ("mixtral", "olmoe", "gpt_oss"):
        return set(range(n))
    if kind in ("qwen2_moe", "qwen3_moe"):
        only, step = set(config.get("mlp_only_layers") or []), config.get("decoder_sparse_step", 1)
        return {i for i in range(n) if i not in only and (i + 1) % step == 0}
    if kind in ("deepseek_v2", "deepseek_v3"):
        return {i for i in range(n) if i >= config.get("first_k_dense_replace", 0)}
    return set()


def _attention_flops(config: dict, batch: int, q_len: int, keys: int) -> int:
    """One layer's attention: projections, QK^T and PV over ``keys`` at every head."""
    d, h = config["hidden_size"], config["num_attention_heads"]
    t = batch * q_len
    if config["model_type"] in ("deepseek_v2", "deepseek_v3"):
        dq, dc = config.get("q_lora_rank"), config["kv_lora_rank"]
        dn, dr, dv = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]
        q = matmul(t, dq, d) + matmul(t, h * (dn + dr), dq) if dq else matmul(t, h * (dn + dr), d)
        return (q + matmul(t, dc + dr, d)            # kv_a_proj_with_mqa
                + matmul(batch * keys, h * (dn + dv), dc)   # kv_b_proj over every attended latent
                + matmul(q_len, keys, dn + dr, batch * h) + matmul(q_len, dv, keys, batch * h)
                + matmul(t, d, h * dv))              # o_proj
    g = config.get("num_key_value_heads") or h
    hd = config.get("head_dim") or d // h
    return (matmul(t, (h + 2 * g) * hd, d) + matmul(t, d, h * hd)
            + attention_core(batch, h, q_len, keys, hd))


def _mlp_flops(config: dict, tokens: int, moe: bool) -> int:
    """One layer's MLP: dense (3 matrices), or router + k experts per token + shared."""
    kind, d = config["model_type"], config["hidden_size"]
    if not moe:
        return 3 * matmul(tokens, config["intermediate_size"], d)
    experts = (config.get("num_local_experts") or config.get("num_experts")
               or config.get("n_routed_experts"))
    width = (config["intermediate_size"] if kind in ("mixtral", "olmoe", "gpt_oss")
             else config["moe_intermediate_size"])
    total = matmul(tokens, experts, d) + config["num_experts_per_tok"] * 3 * matmul(tokens, width, d)
    if kind == "qwen2_moe":   # the shared expert and its gate d -> 1
        total += 3 * matmul(tokens, config["shared_expert_intermediate_size"], d) + matmul(tokens, 1, d)
    if kind in ("deepseek_v2", "deepseek_v3"):
        total += 3 * matmul(tokens, width * config["n_shared_experts"], d)
    return total


def arch_flops(config: dict, batch: int, q_len: int, kv_len: int,
               transformers_version: str | None = None) -> int:
    """Forward of the newer families, eager attention, experts each through its k experts.

    Prefill attends the full ``q_len x q_len`` rectangle on every layer, windowed or not
    (the window is a mask); a decode step attends ``min(kv_len, W)`` keys on a windowed
    layer (the cache keeps W - 1 positions and the new one joins them); latent attention
    re-expands every attended latent with kv_b_proj (transformers' way). Rotary: 0 FLOPs.
    """
    t = batch * q_len
    total = matmul(t, config["vocab_size"], config["hidden_size"])   # lm_head, tied or not
    moe = moe_layers(config)
    for i, window in enumerate(layer_windows(config)):
        keys = kv_len if (window is None or q_len > 1) else min(kv_len, window)
        total += _attention_flops(config, batch, q_len, keys) + _mlp_flops(config, t, i in moe)
    return total


FAMILIES = {"llama": llama_flops, "gpt2": gpt2_flops}
ARCH_FAMILIES = ("mistral", "mixtral", "phi3", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe",
                 "gemma2", "gemma3_text", "olmoe", "gpt_oss", "deepseek_v2", "deepseek_v3")
FAMILIES.update({kind: arch_flops for kind in ARCH_FAMILIES})

#: A training step (forward + backward) costs three forwards: every matmul's backward is
#: two of its size (the input's gradient and the weight's; QK^T and PV: both operands').
TRAIN_FACTOR = 3


def expected_total(entry: dict, transformers_version: str | None = None) -> int:
    """Recompute a fixture entry's ``total_flops`` from its config and shape."""
    b, q_len, kv_len = _shape(entry)
    forward = FAMILIES[entry["family"]](entry["config"], b, q_len, kv_len, transformers_version)
    return TRAIN_FACTOR * forward if entry["phase"] == "train" else forward


def expected_by_op(entry: dict, transformers_version: str | None = None) -> dict[str, int]:
    """Split of ``expected_total`` into the counter's aten op names."""
    b, q_len, kv_len = _shape(entry)
    cfg = entry["config"]
    total = expected_total(entry, transformers_version)
    if entry["family"] == "llama":
        hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        bmm = cfg["num_hidden_layers"] * attention_core(b, cfg["num_attention_heads"], q_len, kv_len, hd)
        bmm += rotary_flops(cfg, q_len, transformers_version)
        # Linear with bias on a 3-D input lowers to aten.addmm, without to aten.mm;
        # lm_head never has a bias.
        lm_head = matmul(b * q_len, cfg["vocab_size"], cfg["hidden_size"])
        linear = total - bmm
        if cfg.get("attention_bias") and cfg.get("mlp_bias"):
            out = {"aten.addmm": linear - lm_head, "aten.mm": lm_head}
        elif cfg.get("attention_bias") or cfg.get("mlp_bias"):
            raise NotImplementedError("mixed bias split not modelled")
        else:
            out = {"aten.mm": linear}
        out["aten.bmm"] = bmm
        return out
    if entry["family"] == "gpt2":
        d, h = cfg["n_embd"], cfg["n_head"]
        bmm = cfg["n_layer"] * attention_core(b, h, q_len, kv_len, d // h)
        lm_head = matmul(b * q_len, cfg["vocab_size"], d)
        return {"aten.addmm": total - bmm - lm_head, "aten.bmm": bmm, "aten.mm": lm_head}
    raise ValueError(entry["family"])


def expected_by_module(entry: dict, transformers_version: str | None = None) -> dict[str, int]:
    """FLOPs under the ``lm_head`` and ``rotary_emb`` modules.

    The LM head runs on every *new* position only: ``B*seq`` rows in prefill
    (``logits_to_keep=0``), ``B`` rows in a decode step.
    """
    b, q_len, _ = _shape(entry)
    cfg = entry["config"]
    if entry["family"] == "llama":
        d, rotary = cfg["hidden_size"], rotary_flops(cfg, q_len, transformers_version)
    elif entry["family"] == "gpt2":
        d, rotary = cfg["n_embd"], 0
    else:
        raise ValueError(entry["family"])
    return {"lm_head": matmul(b * q_len, cfg["vocab_size"], d), "rotary_emb": rotary}
