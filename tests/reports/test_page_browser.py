"""The Try-it page in a real headless browser: Debian's chromium and chromium-driver,
driven by selenium (the ``browser`` extra).

Settings are made the way a person makes them (typing, clicking, arrow keys); the
numbers the page shows are compared with the engine's exact values formatted in Python.
Without chromium, chromedriver or selenium the tests skip and say which is missing;
under ``CI=true`` they fail instead. Set ``SYMROOF_PAGE_SHOTS=DIR`` to keep screenshots
of the page at its defaults and after each control moves.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from random import Random
from typing import Any

import pytest
import sympy as sp

import symroof as sr
from symroof import hardware
from symroof import symbols as s
from symroof.present.numbers import grouped, si
from symroof.present.page import render_page
from symroof.present.page_format import decimals, duration, figure, prefixed

# a real browser: the slowest tests of the suite, all in this one file
pytestmark = pytest.mark.slow

SEED = sr.models.get("seed-6.4b")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
DASH = "\u2014"
OUTPUTS = ("flops", "bytes", "intensity", "ceiling", "peak", "bandwidth", "ridge", "compute",
           "memory", "bound", "attainable")
KEYS = ("gemm-big", "gemm-small", "attention", "decode-small", "decode-large", "relu")
SHOTS = os.environ.get("SYMROOF_PAGE_SHOTS")


def _missing(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what}; CI=true, where the browser tests must run "
                    "(apt-get install chromium chromium-driver; pip install 'symroof[browser]')")
    pytest.skip(what)


class Page:
    """The page in Chromium, with the few gestures the tests make."""

    def __init__(self, driver: Any, keys: Any, by: Any, select: Any, url: str) -> None:
        self.d, self.keys, self.by, self.select, self.url = driver, keys, by, select, url

    def reset(self, width: int = 1280, expert: bool = True) -> None:
        """A fresh page; in the Expert view unless ``expert`` is False (the tests that move
        the shape, width and peak controls need it: the basic view hides them)."""
        self.d.set_window_size(width, 1000)
        self.d.get(self.url)
        if expert:
            self.click("expert")

    def el(self, id_: str) -> Any:
        return self.d.find_element(self.by.ID, id_)

    def text(self, id_: str) -> str:
        return str(self.el(id_).text)

    def outputs(self) -> dict[str, str]:
        return dict(self.d.execute_script(
            "const out = {};"
            "for (const k of arguments[0]) out[k] = document.getElementById('out-' + k).textContent;"
            "for (const k of arguments[1]) for (const f of ['intensity', 'bound', 'time'])"
            "  out[k + '/' + f] = document.getElementById('row-' + k + '-' + f).textContent;"
            "out.msg = document.getElementById('page-msg').textContent; return out;",
            list(OUTPUTS), list(KEYS)))

    def choose(self, id_: str, value: str) -> None:
        self.select(self.el(id_)).select_by_value(value)

    def type(self, id_: str, text: str) -> None:
        box = self.el(id_)
        box.send_keys(self.keys.CONTROL, "a")
        box.send_keys(self.keys.BACKSPACE)
        if text:
            box.send_keys(text)

    def click(self, id_: str) -> None:
        self.el(id_).click()

    def set(self, *, chip: str | None = None, width: int | None = None, mode: str | None = None,
            workload: str | None = None, fused: bool | None = None,
            values: dict[str, int] | None = None) -> None:
        if chip:
            self.choose("chip", chip)
        if width:
            self.click(f"width-{width}")
        if mode:
            self.click(f"mode-{mode}")
        if workload:
            self.choose("workload", workload)
        if fused is not None and self.el(f"{workload}-fused").is_selected() != fused:
            self.click(f"{workload}-fused")
        for name, value in (values or {}).items():
            self.type(f"{workload}-{name}", str(value))

    def shot(self, name: str, width: int = 1280) -> None:
        if not SHOTS:
            return
        self.d.set_window_size(width, 1000)
        height = self.d.execute_script("return document.documentElement.scrollHeight")
        self.d.set_window_size(width, int(height) + 20)
        self.d.execute_script("window.scrollTo(0, 0);")
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        self.d.save_screenshot(str(Path(SHOTS) / f"{name}.png"))
        if width < 600:   # a phone's page is too tall to read whole: its sections too
            for section in ("controls", "results", "chart-section", "all"):
                self.el(section).screenshot(str(Path(SHOTS) / f"{name}-{section}.png"))
        self.d.set_window_size(width, 1000)

    def errors(self) -> list[str]:
        return [e["message"] for e in self.d.get_log("browser") if e["level"] == "SEVERE"]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    try:  # selenium is optional (the browser extra): imported only when these tests run
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        from selenium.webdriver.support.ui import Select
    except ImportError:
        _missing("selenium is not installed (pip install 'symroof[browser]')")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not chromium or not chromedriver:
        _missing("chromium and chromium-driver are not installed (apt-get install chromium "
                 "chromium-driver)")
    options = Options()
    options.binary_location = chromium
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="symroof-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    except WebDriverException as err:
        _missing(f"chromium did not start: {err.msg}")
    html = tmp_path_factory.mktemp("page") / "try_it.html"
    html.write_text(render_page(), encoding="utf-8")
    try:
        yield Page(driver, Keys, By, Select, html.as_uri())
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def fresh(page: Page) -> Page:
    page.reset()
    return page


# ---------------------------------------------------------------------------
# Python's side: the engine's exact values, formatted by symroof.present.page_format


def engine(key: str, fused: bool = True):
    m = SEED
    if key.startswith("gemm"):
        return sr.workloads.gemm(s.M, s.N, s.K)
    if key == "attention":
        return sr.workloads.attention(s.S, m.d_model, m.heads, fused=fused,
                                      unfused="materialize_once")
    if key.startswith("decode"):
        return sr.workloads.decode(m, s.B, s.S)
    return sr.workloads.elementwise(s.n)


def precision(chip: str, width: int, mode: str) -> str:
    """The peak each mode should take on the sample's chips (all list bf16)."""
    spec = hardware.get(chip)
    if mode == "seed" or width == 2:
        return "bf16"
    return "fp8" if "fp8" in spec.precisions() else "int8"


def expected(key: str, values: dict[str, int], *, chip: str = "h100-sxm", width: int = 2,
             mode: str = "seed", fused: bool = True) -> dict[str, str]:
    a = engine(key, fused)
    free = a.flops.free_symbols | a.bytes.free_symbols
    subs = {x: width if x == s.b else values[x.name] for x in free}
    f, q = sr.evaluate(a.flops, subs), sr.evaluate(a.bytes, subs)
    i = f / q
    spec = hardware.get(chip)
    p = precision(chip, width, mode)
    peak, bw = spec.peak(p), spec.bandwidth()
    unit = "matrix" if p in spec.precisions("matrix") else "vector"
    out = {"flops": prefixed(f, "FLOP"), "bytes": prefixed(q, "B"),
           "intensity": f"{figure(i)} FLOP/B", "ridge": f"{figure(peak / bw)} FLOP/B",
           "peak": f"{si(peak, 'OP/s' if p == 'int8' else 'FLOP/s', 12)} ({p} {unit})",
           "compute": duration(f / peak), "memory": duration(q / bw),
           "bound": "compute-bound" if i > peak / bw else "memory-bound" if i < peak / bw
           else "at the ridge",
           "attainable": prefixed(sp.Min(peak, bw * i), "FLOP/s")}
    if key.startswith("decode"):
        out["ceiling"] = f"{figure(sr.evaluate(sr.limit(a.intensity, s.B), subs))} FLOP/B"
    return out


def seed_intensity(key: str, values: dict[str, int], width: int = 2, fused: bool = True) -> str:
    return expected(key, values, width=width, fused=fused)["intensity"].removesuffix(" FLOP/B")


DEFAULTS = {"gemm-big": {"M": 8192, "N": 8192, "K": 8192},
            "gemm-small": {"M": 256, "N": 256, "K": 256}, "attention": {"S": 4096},
            "decode-small": {"B": 1, "S": 1024}, "decode-large": {"B": 64, "S": 1024},
            "relu": {"n": 16 * 2**20}}


# ---------------------------------------------------------------------------
# the seed's numbers at the defaults


def test_defaults_show_the_seeds_numbers(fresh: Page):
    out = fresh.outputs()
    seed = {"gemm-big": "2,731", "gemm-small": "85", "attention": "1,024",
            "decode-small": "1.0", "decode-large": "18", "relu": "0.25"}
    assert {k: out[f"{k}/intensity"] for k in KEYS} == seed
    # and Python's derivation gives the same text for the same settings
    assert {k: seed_intensity(k, DEFAULTS[k]) for k in KEYS} == seed
    assert out["intensity"] == "2,731 FLOP/B" and out["msg"] == ""
    assert out["bound"] == "compute-bound" and out["ridge"] == "295 FLOP/B"
    assert out["peak"] == "989.4 TFLOP/s (bf16 matrix)"
    assert out["bandwidth"] == "3.35 TB/s (hbm)"
    fresh.set(workload="attention", fused=False)
    assert fresh.outputs()["attention/intensity"] == "114"     # S x S materialized once
    assert seed_intensity("attention", {"S": 4096}, fused=False) == "114"
    assert fresh.errors() == []
    fresh.reset()
    fresh.shot("defaults-desktop")
    fresh.shot("defaults-360", width=360)


def test_selected_workload_details_match_python(fresh: Page):
    for key in KEYS:
        fresh.set(workload=key)
        out = fresh.outputs()
        want = expected(key, DEFAULTS[key])
        assert {k: out[k] for k in want} == want, key
        if not key.startswith("decode"):
            assert out["ceiling"] == DASH


# ---------------------------------------------------------------------------
# a seeded sample of settings, made through the controls


def sample(rng: Random) -> dict[str, Any]:
    key = rng.choice(KEYS)
    def size(top: int) -> int:
        return rng.choice([rng.randint(1, top), 2 ** rng.randint(0, top.bit_length() - 1)])
    values = {"gemm-big": lambda: {"M": size(65536), "N": size(65536), "K": size(65536)},
              "gemm-small": lambda: {"M": size(4096), "N": size(4096), "K": size(4096)},
              "attention": lambda: {"S": size(65536)},
              "decode-small": lambda: {"B": size(1024), "S": size(32768)},
              "decode-large": lambda: {"B": size(1024), "S": size(32768)},
              "relu": lambda: {"n": size(2**40)}}[key]()
    return {"key": key, "values": values, "width": rng.choice([2, 1]),
            "mode": rng.choice(["seed", "chip"]), "fused": rng.random() < 0.5,
            "chip": rng.choice(["h100-sxm", "h200", "a100-80gb", "mi300x", "l4", "b200"])}


def test_seeded_sample_matches_python(fresh: Page):
    rng = Random(14)
    for _ in range(10):
        c = sample(rng)
        fresh.set(chip=c["chip"], width=c["width"], mode=c["mode"], workload=c["key"],
                  fused=c["fused"] if c["key"] == "attention" else None, values=c["values"])
        out = fresh.outputs()
        want = expected(c["key"], c["values"], chip=c["chip"], width=c["width"],
                        mode=c["mode"], fused=c["fused"] or c["key"] != "attention")
        assert {k: out[k] for k in want} == want, c
        assert out["msg"] == ""
        _labels_are_clear(fresh, f"sample {c}")
    assert fresh.errors() == []


def test_number_rules_agree_with_python(fresh: Page):
    rng = Random(2731)
    xs = [0.0, 0.125, 0.375, 2.5, 10.5, 11.5, 0.0125, 9.96, 0.995, 99.5, 1e-7, 1.0, 1e21,
          2.0**70, 1e-3, 0.001 * (1 - 2**-52), 999.5, 1e15 - 0.5, 123456.5]
    xs += [rng.uniform(1, 10) * 10.0 ** rng.randint(-12, 22) for _ in range(300)]
    xs += [float(rng.randint(1, 10**6)) / 8 for _ in range(100)]        # exact ties abound
    got = fresh.d.execute_script(
        "const S = window.symroofSim; return arguments[0].map((x) => "
        "[S.figure(x), S.prefixed(x, 'B'), S.duration(x), S.grouped(x, 3), S.decimals(x)]);", xs)
    want = [[figure(x), prefixed(x, "B"), duration(x), grouped(x, 3), decimals(x)] for x in xs]
    assert got == want


# ---------------------------------------------------------------------------
# bad values typed into a control


@pytest.mark.parametrize("bad, says", [
    ("", "empty"), ("-5", "negative"), ("abc", "not a number"), ("2.5", "not a whole number"),
    ("1e30", "too large"), ("99999999999999999999999", "too large"), ("0", "too small"),
    ("1e999", "too large"), ("Infinity", "not a number"), ("NaN", "not a number"),
    ("12 34x", "not a number"), ("1048577", "too large"),
])
def test_bad_values_show_a_message(fresh: Page, bad: str, says: str):
    fresh.type("gemm-big-N", bad)
    msg = fresh.text("gemm-big-N-msg")
    assert "big GEMM, N" in msg and says in msg and "1,048,576" in msg, msg
    assert fresh.el("gemm-big-N").get_attribute("aria-invalid") == "true"
    out = fresh.outputs()
    assert msg in out["msg"]
    assert out["intensity"] == out["flops"] == out["gemm-big/intensity"] == DASH
    assert out["gemm-small/intensity"] == "85"          # the others still show their numbers
    shown = fresh.d.execute_script(
        "return [...document.querySelectorAll('dd, td, th, #chart text, #chart desc')]"
        ".map((e) => e.textContent).join(' ');")
    for word in ("NaN", "Infinity", "undefined", "null"):
        assert word not in shown
    points = fresh.d.execute_script(
        "return [...document.querySelectorAll('#chart circle.point')].map((c) => c.dataset.workload);")
    assert "gemm-big" not in points and len(points) == 5
    if bad == "abc":
        fresh.shot("bad-value")
    fresh.type("gemm-big-N", "8,192")                     # grouping commas are fine
    assert fresh.text("gemm-big-N-msg") == "" and fresh.outputs()["intensity"] == "2,731 FLOP/B"
    assert fresh.errors() == []


def test_largest_values_stay_finite(fresh: Page):
    fresh.set(workload="gemm-big", values={"M": 2**20, "N": 2**20, "K": 2**20})
    assert fresh.outputs()["flops"] == "2.3 EFLOP"
    fresh.set(workload="decode-large", values={"B": 2**16, "S": 2**20})
    fresh.set(workload="relu", values={"n": 2**40})
    out = fresh.outputs()
    assert out["msg"] == "" and not any(w in " ".join(out.values()) for w in ("NaN", "Infinity"))
    fresh.set(chip="tpu-v1", mode="chip")                 # no 16-bit peak on this chip
    out = fresh.outputs()
    assert "lists no 16-bit peak" in out["msg"] and out["compute"] == DASH
    assert out["intensity"] == f"{figure(Fraction(1, 4))} FLOP/B"


# ---------------------------------------------------------------------------
# the seed's four "Try" prompts


def test_try_shrink_one_gemm_dimension(fresh: Page):
    fresh.click("try-0-shrink")
    out = fresh.outputs()
    assert out["intensity"] == "124 FLOP/B"                # NVIDIA's 8192 x 128 x 8192: 124.1
    assert out["intensity"] == expected("gemm-big", {"M": 8192, "N": 128, "K": 8192})["intensity"]
    for small in (16, 256, 1024):
        shown = set()
        for name in ("M", "N", "K"):                      # whichever is smallest sets I
            fresh.set(workload="gemm-big", values={"M": 8192, "N": 8192, "K": 8192, name: small})
            shown.add(fresh.outputs()["intensity"])
        (text,) = shown                                   # the same whichever dimension
        value = float(text.split()[0].replace(",", ""))
        # I = 2n/(b(1 + 2n/8192)) for n = min(M, N, K) << 8192: about n at b = 2
        assert small / (1 + 2 * small / 8192) - 0.5 <= value <= small, (small, text)
    fresh.shot("try-shrink")


def test_try_turn_off_fusion(fresh: Page):
    fresh.click("try-0-unfuse")
    out = fresh.outputs()
    assert out["intensity"] == "114 FLOP/B" and out["bound"] == "memory-bound"
    assert not fresh.el("attention-fused").is_selected()
    fresh.shot("try-unfuse")
    fresh.shot("try-unfuse-360", width=360)
    fresh.click("attention-fused")
    assert fresh.outputs()["intensity"] == "1,024 FLOP/B"


def test_try_push_decode_batch(fresh: Page):
    fresh.click("try-0-batch")
    out = fresh.outputs()
    assert (out["intensity"], out["ceiling"]) == ("24 FLOP/B", "25 FLOP/B")    # -> (12D/S + 2)/b
    fresh.click("try-1-batch")
    out = fresh.outputs()
    assert (out["intensity"], out["ceiling"]) == ("4.0 FLOP/B", "4.0 FLOP/B")
    assert out == {**out, **{k: v for k, v in expected(
        "decode-large", {"B": 512, "S": 8192}).items()}}
    fresh.shot("try-batch")


def test_try_switch_to_8_bit(fresh: Page):
    fresh.click("try-0-bits")
    out = fresh.outputs()
    assert out["intensity"] == "5,461 FLOP/B"               # 2n/(3b) at b = 1
    assert out["peak"] == "989.4 TFLOP/s (bf16 matrix)" and out["ridge"] == "295 FLOP/B"
    assert out["relu/intensity"] == "0.50"
    fresh.click("try-1-bits")
    out = fresh.outputs()
    assert out["peak"] == "1978.9 TFLOP/s (fp8 matrix)" and out["ridge"] == "591 FLOP/B"
    fresh.shot("try-bits")


# ---------------------------------------------------------------------------
# keyboard, labels, layout


def test_every_control_is_reachable_by_keyboard(fresh: Page):
    fresh.d.execute_script("document.activeElement.blur(); window.scrollTo(0, 0);")
    body = fresh.d.find_element(fresh.by.TAG_NAME, "body")
    body.send_keys(fresh.keys.TAB)
    seen = []
    for _ in range(80):
        info = fresh.d.execute_script(
            "const e = document.activeElement; return [e.id, e.tagName, "
            "(e.labels && e.labels.length ? e.labels[0].textContent : '') || "
            "e.getAttribute('aria-label') || e.textContent];")
        seen.append(info[0])
        assert info[2].strip(), f"{info[0]} has no accessible name"
        fresh.d.switch_to.active_element.send_keys(fresh.keys.TAB)
    for id_ in ("chip", "width-2", "mode-seed", "workload", "gemm-big-M", "gemm-big-M-slider",
                "gemm-big-K-slider", "reset", "row-relu-name", "try-0-shrink", "try-1-bits"):
        assert id_ in seen, id_
    fresh.el("width-2").send_keys(fresh.keys.ARROW_DOWN)          # a radio group's arrows
    assert fresh.el("width-1").is_selected()
    assert fresh.outputs()["intensity"] == "5,461 FLOP/B"
    fresh.el("gemm-big-M-slider").send_keys(fresh.keys.ARROW_LEFT)  # one power of two down
    assert fresh.el("gemm-big-M").get_attribute("value") == "4096"
    assert fresh.outputs()["intensity"] == expected(
        "gemm-big", {"M": 4096, "N": 8192, "K": 8192}, width=1)["intensity"]


@pytest.mark.parametrize("width", [360, 1280])
def test_readable_at_phone_and_desktop_widths(page: Page, width: int):
    page.reset(width)
    got = page.d.execute_script("""
        const doc = document.documentElement, svg = document.querySelector('#chart svg');
        const sizes = [...document.querySelectorAll('#chart text')]
          .map((t) => parseFloat(getComputedStyle(t).fontSize));
        const r = (id) => document.getElementById(id).getBoundingClientRect();
        const controls = [...document.querySelectorAll('input, select, button')]
          .filter((e) => e.offsetParent !== null && !e.closest('.scroll'))
          .map((e) => e.getBoundingClientRect()).filter((b) => b.right > doc.clientWidth + 1);
        return {scroll: doc.scrollWidth, client: doc.clientWidth, svg: svg.getBoundingClientRect().width,
                smallest: Math.min(...sizes), body: parseFloat(getComputedStyle(document.body).fontSize),
                outside: controls.length, controls: r('controls').left, results: r('results').left};""")
    assert got["scroll"] <= got["client"], got                  # no sideways scrolling
    assert got["svg"] <= got["client"] and got["outside"] == 0, got
    assert got["smallest"] >= 11 and got["body"] >= 16, got
    if width >= 900:
        assert got["controls"] < got["results"], got            # settings beside the results
    else:
        assert got["controls"] == got["results"], got           # one column
    assert page.errors() == []


def test_every_control_moves_the_page(fresh: Page):
    """Each control changes what the page shows; with SYMROOF_PAGE_SHOTS, a screenshot each."""
    def state() -> str:
        return str(fresh.d.execute_script(
            "return document.getElementById('results').textContent + "
            "document.querySelector('#chart svg').innerHTML;"))
    moves: list[tuple[str, Any]] = [
        ("chip", lambda: fresh.choose("chip", "mi300x")),
        ("width", lambda: fresh.click("width-1")),
        ("mode", lambda: fresh.click("mode-chip")),
    ]
    for key in KEYS[1:] + KEYS[:1]:                       # gemm-big, selected now, last
        moves.append((f"workload-{key}", lambda key=key: fresh.choose("workload", key)))
        for name in DEFAULTS[key]:
            moves.append((f"{key}-{name}", lambda key=key, name=name: fresh.type(
                f"{key}-{name}", str(DEFAULTS[key][name] * 4))))
            moves.append((f"{key}-{name}-slider", lambda key=key, name=name: fresh.el(
                f"{key}-{name}-slider").send_keys(fresh.keys.ARROW_LEFT, fresh.keys.ARROW_LEFT)))
        if key == "attention":
            moves.append(("attention-fused", lambda: fresh.click("attention-fused")))
    moves.append(("reset", lambda: fresh.click("reset")))
    for name, move in moves:
        before = state()
        move()
        assert state() != before, f"moving {name} changed nothing"
        fresh.shot(f"moved-{name}")
    assert fresh.outputs()["intensity"] == "2,731 FLOP/B"       # reset: the seed's settings
    assert fresh.errors() == []


# ---------------------------------------------------------------------------
# issue 21 section 3: labels, the Expert view, conventions, sources

LABEL_CHECK = """
    const boxes = (sel) => [...document.querySelectorAll(sel)].map((e) => {
        const r = e.getBoundingClientRect();
        return {x0: r.left, x1: r.right, y0: r.top, y1: r.bottom, text: e.textContent,
                names: e.dataset.names || null, marker: e.dataset.workload || (e.classList.contains('ridge') ? 'ridge' : null)};
    });
    const hit = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
    const labels = boxes('#chart text');
    const markers = boxes('#chart circle');
    const bad = [];
    for (let i = 0; i < labels.length; i++) {
        for (let j = i + 1; j < labels.length; j++) {
            if (hit(labels[i], labels[j])) bad.push(['labels', labels[i].text, labels[j].text]);
        }
        for (const m of markers) {
            if (m.marker !== labels[i].names && hit(labels[i], m)) bad.push(['marker', labels[i].text, m.marker]);
        }
    }
    // a leader line (label to its point) passes over no other marker
    for (const line of document.querySelectorAll('#chart line.leader')) {
        const [x1, y1, x2, y2] = ['x1', 'y1', 'x2', 'y2'].map((k) => Number(line.getAttribute(k)));
        const svg = line.ownerSVGElement.getBoundingClientRect();
        for (const m of markers) {
            const inside = (x, y) => m.x0 <= x + svg.left && x + svg.left <= m.x1 && m.y0 <= y + svg.top && y + svg.top <= m.y1;
            if (inside(x1, y1)) continue;          // its own marker (or one on the same spot)
            for (let k = 1; k < 50; k++) {
                if (inside(x1 + (x2 - x1) * k / 50, y1 + (y2 - y1) * k / 50)) { bad.push(['leader', m.marker]); break; }
            }
        }
    }
    const points = [...document.querySelectorAll('#chart circle.point')].map((c) => c.dataset.workload);
    const named = labels.filter((l) => l.names).map((l) => l.names);
    return {bad: bad, points: points, named: named, count: labels.length};
"""


def _labels_are_clear(page: Page, where: str) -> None:
    got = page.d.execute_script(LABEL_CHECK)
    assert got["bad"] == [], (where, got["bad"])
    for key in got["points"]:                    # every point is named by exactly one label
        assert got["named"].count(key) == 1, (where, key, got["named"])
    assert got["count"] >= len(got["points"]) + 4, where   # ticks, axes and the roof labelled too


@pytest.mark.parametrize("width", [1280, 360])
def test_labels_never_overlap_after_each_try_button(page: Page, width: int):
    """No two chart texts intersect (getBoundingClientRect) and no label covers a marker it
    does not name: at the defaults, after each Try button, and in the basic view."""
    page.reset(width, expert=False)
    _labels_are_clear(page, "defaults, basic view")
    buttons = page.d.execute_script(
        "return [...document.querySelectorAll('button[data-try]')].map((b) => b.id);")
    assert len(buttons) == 6
    for id_ in buttons:
        page.click(id_)
        _labels_are_clear(page, f"{id_} at {width} px")
        page.click("workload")   # focus moves off the button; the chart stays
    page.click("reset")
    _labels_are_clear(page, "after reset")
    for key in KEYS:           # every workload selected in turn (its label bold, first placed)
        page.choose("workload", key)
        _labels_are_clear(page, f"{key} selected at {width} px")
    assert page.errors() == []


def test_try_buttons_start_from_the_chapters_settings(fresh: Page):
    """A Try button resets first, so one prompt's change does not pile onto another's."""
    fresh.click("try-0-bits")                        # 8-bit
    fresh.click("try-0-shrink")                      # then N = 128: back at 16 bits
    assert fresh.el("width-2").is_selected() and fresh.outputs()["intensity"] == "124 FLOP/B"
    fresh.click("try-0-unfuse")                      # then unfused: big GEMM's N is 8,192 again
    out = fresh.outputs()
    assert out["gemm-big/intensity"] == "2,731" and out["intensity"] == "114 FLOP/B"
    fresh.set(chip="mi300x", workload="decode-large", values={"B": 2})
    fresh.click("try-1-batch")
    assert fresh.el("chip").get_attribute("value") == "h100-sxm"
    assert fresh.outputs()["decode-small/intensity"] == "1.0"


def test_expert_view_toggle(page: Page):
    page.reset(1280, expert=False)
    button = page.el("expert")
    assert button.get_attribute("aria-pressed") == "false"
    assert "Basic view" in page.text("view-state")
    hidden = ("width-2", "mode-seed", "gemm-big-M", "out-flops", "out-compute", "row-relu-time")
    assert not any(page.el(id_).is_displayed() for id_ in hidden)
    assert page.el("out-intensity").is_displayed() and page.el("chip").is_displayed()
    assert page.el("formula-intensity").is_displayed()
    # keyboard: Tab reaches the toggle, Space and Enter press it
    page.d.execute_script("document.activeElement.blur(); window.scrollTo(0, 0);")
    page.d.find_element(page.by.TAG_NAME, "body").send_keys(page.keys.TAB)
    for _ in range(10):
        if page.d.switch_to.active_element.get_attribute("id") == "expert":
            break
        page.d.switch_to.active_element.send_keys(page.keys.TAB)
    assert page.d.switch_to.active_element.get_attribute("id") == "expert"
    page.d.switch_to.active_element.send_keys(page.keys.SPACE)
    assert button.get_attribute("aria-pressed") == "true" and "Expert view:" in page.text("view-state")
    assert all(page.el(id_).is_displayed() for id_ in hidden)
    assert page.outputs()["flops"] == "1.1 TFLOP"
    page.d.switch_to.active_element.send_keys(page.keys.ENTER)
    assert button.get_attribute("aria-pressed") == "false"
    assert not page.el("out-flops").is_displayed()
    page.click("try-0-unfuse")                        # a Try button opens the Expert view
    assert button.get_attribute("aria-pressed") == "true"
    assert page.el("attention-fused").is_displayed()
    assert page.errors() == []


def test_unfused_conventions_on_the_page(fresh: Page):
    fresh.set(workload="attention")
    assert not fresh.el("attention-unfused").is_enabled()     # fused: no convention applies
    assert fresh.text("formula-intensity") == "I = F/Q = S/(2b)"
    fresh.set(workload="attention", fused=False)
    assert fresh.el("attention-unfused").is_enabled()
    assert fresh.outputs()["intensity"] == "114 FLOP/B"
    assert fresh.text("formula-bytes") == "Q = 4SDb + hS²b"
    fresh.choose("attention-unfused", "write_and_read")
    out = fresh.outputs()
    assert out["intensity"] == "31 FLOP/B"
    assert fresh.text("formula-bytes") == "Q = 4SDb + 4hS²b"
    a = sr.workloads.attention(s.S, 4096, 32, fused=False, unfused="write_and_read")
    assert out["bytes"] == prefixed(sr.evaluate(a.bytes, {s.S: 4096, s.b: 2}), "B")
    fresh.shot("unfused-write-and-read")
    fresh.click("reset")
    assert fresh.el("attention-unfused").get_attribute("value") == "materialize_once"


def test_formulas_and_sources_shown(fresh: Page):
    fresh.set(workload="decode-large")
    assert fresh.text("formula-flops") == "F = B(2P + 4LSD)"
    assert fresh.text("formula-ceiling") == "I \u2192 (2P + 4LSD)/(2bLSD) = (12D/S + 2)/b as B \u2192 \u221e"
    assert "P = 12LD²" in fresh.text("formula-where")
    fresh.set(workload="gemm-big")
    assert fresh.text("formula-special") == "I = 2n/(3b) when M = N = K = n"
    assert not fresh.el("formula-where-item").is_displayed()
    h100 = hardware.get("h100-sxm")
    assert fresh.text("src-bandwidth") == h100.source("memory.hbm")
    assert fresh.text("src-peak") == h100.source("peak.matrix.bf16")
    assert fresh.text("chip-file") == "h100-sxm.toml"
    fresh.set(chip="mi300x", width=1, mode="chip")
    mi = hardware.get("mi300x")
    assert fresh.text("src-peak") == mi.source("peak.matrix.fp8")
    page_text = fresh.d.execute_script("return document.getElementById('results').innerText;")
    assert not any(c in page_text for c in ("12884901888", "**", "*B"))


@pytest.mark.parametrize("width", [1280, 360])
def test_labels_stay_clear_where_points_coincide(page: Page, width: int):
    """Two workloads on one point (both GEMMs 8,192 cubed, both decodes at B = 64) and every
    point crowded into two decades: each label still finds a free place, with a leader line."""
    page.reset(width)
    page.set(workload="gemm-small", values={"M": 8192, "N": 8192, "K": 8192})
    page.set(workload="decode-small", values={"B": 64})
    _labels_are_clear(page, "coincident points")
    page.set(workload="attention", values={"S": 8192})
    page.set(workload="gemm-big", values={"M": 2048, "N": 2048, "K": 2048})
    page.set(workload="relu", values={"n": 1})
    _labels_are_clear(page, "crowded")
    page.shot(f"crowded-{width}", width=width)
    assert page.errors() == []


def test_screenshots_of_both_views(page: Page):
    """With SYMROOF_PAGE_SHOTS: the basic and the Expert view at desktop and phone widths."""
    for width, name in ((1280, "desktop"), (360, "360")):
        page.reset(width, expert=False)
        page.shot(f"basic-{name}", width=width)
        page.reset(width, expert=True)
        page.shot(f"expert-{name}", width=width)
        page.click("try-1-batch")
        page.shot(f"expert-try-batch-{name}", width=width)
    assert page.errors() == []
