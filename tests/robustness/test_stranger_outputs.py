"""Outputs and documents from strangers (issue 28, "Outputs"): a report's files are
replaced as a whole, ``--out`` never turns a FIFO, a device or a link into a regular file,
``symroof check`` skips code and reads lines as editors do and prints no terminal control
sequence, and two command-line failures end in one line.

Each test here failed before the fix it names and passes after it.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import symroof.files
from symroof.cli import main
from symroof.errors import SymroofError
from symroof.files import write_text
from symroof.verify import EXAMPLE, parse_claims
from symroof.verify import schema
from symroof.verify.annotations import annotated_claims, find_annotations

# the package's own `from __future__ import annotations` hides the submodule's attribute
annotations = importlib.import_module("symroof.verify.annotations")

CHART = '''
[[chart]]
id = "roof"
kind = "roofline"
document = "000"
after = "GEMM intensity"
hardware = "h100-sxm"
points = [{label = "gemm", claim = "gemm-square-8192"}]
'''


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _report(tmp_path: Path, quantity: str) -> Path:
    src = tmp_path / "c.toml"
    src.write_text(EXAMPLE.replace("intensity of a square GEMM", quantity) + CHART)
    return src


# -- a report's set of files is replaced as a whole ----------------------------------------


def test_a_full_disk_leaves_the_old_report_set_intact(tmp_path, monkeypatch, capsys):
    src = _report(tmp_path, "first")
    out = tmp_path / "out"
    assert main(["report", str(src), "--out", str(out)]) == 0
    before = _snapshot(out)
    assert sorted(before) == ["c.json", "c.md", "c.tex", "charts/roof.svg"]
    _report(tmp_path, "second")
    real, calls = symroof.files._write_all, []

    def full(fd: int, data: bytes) -> None:
        calls.append(len(data))
        if len(calls) == 3:  # the third file of the set meets a full disk
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(symroof.files, "_write_all", full, raising=False)
    assert main(["report", str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err
    assert _snapshot(out) == before  # every old file as it was, no temporary file left
    monkeypatch.undo()
    assert main(["report", str(src), "--out", str(out)]) == 0
    assert b"second" in (out / "c.md").read_bytes() and _snapshot(out).keys() == before.keys()


_KILLED = """
import os, signal, sys
real, n = os.replace, [0]
def replace(a, b):
    n[0] += 1
    if n[0] == 2:  # killed between two renames
        os.kill(os.getpid(), signal.SIGKILL)
    real(a, b)
os.replace = replace
from symroof.cli import main
main(["report", sys.argv[1], "--out", sys.argv[2]])
"""


def test_stale_temporary_files_of_a_killed_run_are_removed(tmp_path, capsys):
    src = _report(tmp_path, "first")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", _KILLED, str(src), str(out)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == -9
    assert [p for p in out.rglob("*.tmp")]  # the killed run left temporary files
    (out / ".notes.txt").write_text("mine")  # a file that only looks like ours stays
    (out / ".c.md.tmp").write_text("mine too")
    assert main(["report", str(src), "--out", str(out)]) == 0
    assert sorted(_snapshot(out)) == [".c.md.tmp", ".notes.txt", "c.json", "c.md", "c.tex",
                                      "charts/roof.svg"]


def test_write_files_writes_every_temporary_file_before_the_first_rename(tmp_path, monkeypatch):
    seen: list[list[str]] = []
    real = os.replace

    def replace(a: str, b: str) -> None:
        seen.append(sorted(p.name for p in tmp_path.rglob("*.tmp")))
        real(a, b)

    monkeypatch.setattr(os, "replace", replace)
    symroof.files.write_files(tmp_path, {"a.md": "a", "b.tex": "b", "charts/c.svg": "c"})
    assert len(seen[0]) == 3 and [len(s) for s in seen] == [3, 2, 1]
    assert _snapshot(tmp_path) == {"a.md": b"a", "b.tex": b"b", "charts/c.svg": b"c"}


# -- --out onto something that is not a regular file ---------------------------------------


def test_report_refuses_a_fifo_in_its_set_and_leaves_it_a_fifo(tmp_path, capsys):
    src = _report(tmp_path, "first")
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "c.md")
    assert main(["report", str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file" in err and "c.md" in err
    assert stat.S_ISFIFO(os.lstat(out / "c.md").st_mode)
    assert sorted(os.listdir(out)) == ["c.md"]


def test_write_text_onto_a_link_to_dev_null_writes_in_place_and_keeps_the_link(tmp_path):
    link = tmp_path / "page.html"
    link.symlink_to(os.devnull)
    write_text(link, "<p>x</p>")
    assert link.is_symlink() and os.readlink(link) == os.devnull
    write_text(os.devnull, "nothing")  # a device: written in place
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_write_text_onto_a_fifo_without_a_reader_is_refused_not_replaced(tmp_path):
    fifo = tmp_path / "out.svg"
    os.mkfifo(fifo)
    with pytest.raises(SymroofError, match="no reader"):
        write_text(fifo, "<svg/>")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["out.svg"]


def test_write_text_onto_a_fifo_with_a_reader_writes_into_it(tmp_path):
    fifo = tmp_path / "out.svg"
    os.mkfifo(fifo)
    reader = subprocess.Popen([sys.executable, "-c", f"print(open({str(fifo)!r}).read(), end='')"],
                              stdout=subprocess.PIPE, text=True)
    fd = os.open(fifo, os.O_WRONLY)  # wait until the reader has it open
    try:
        write_text(fifo, "<svg/>")
    finally:
        os.close(fd)
    assert reader.communicate(timeout=120)[0] == "<svg/>"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_sim_out_onto_a_directory_is_one_line(tmp_path, capsys):
    assert main(["sim", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file" in err
    assert tmp_path.is_dir()


# -- symroof check ---------------------------------------------------------------------------

GOOD = ('A GEMV at 16 bits is 1 FLOP/B.\n<!-- symroof claimed = 1\nunit = "FLOP/B"\n'
        'rounding = {sig = 1}\nvalue = {workload = {builder = "gemv", args = ["4096", "4096"]}, '
        'q = "I"}\nsubs = {b = 2} -->\n')
SHOWN = '<!-- symroof claimed = 7\nunit = "bogus"\nvalue = {} -->'


@pytest.mark.parametrize("wrap", [
    lambda s: f"```toml\n{s}\n```\n", lambda s: f"~~~\n{s}\n~~~\n",
    lambda s: f"````md\n```\n{s}\n```\n````\n",
    lambda s: "\n" + "\n".join("    " + x for x in s.splitlines()) + "\n",
    lambda s: "\n" + "\n".join("\t" + x for x in s.splitlines()) + "\n",
    lambda s: "Write `" + s.replace("\n", " ") + "` beside the sentence.\n",
    lambda s: "Write ``" + s.replace("\n", " ") + "`` beside it.\n",
    lambda s: "```\n<!-- symroof never closed\n```\n",
])
def test_check_skips_annotations_shown_as_code_in_markdown(wrap, tmp_path, capsys):
    doc = tmp_path / "chapter.md"
    doc.write_text("# How to annotate\n\n" + wrap(SHOWN) + "\n" + GOOD)
    assert main(["check", str(doc)]) == 0, capsys.readouterr()
    (claim,) = annotated_claims(doc.read_text(), str(doc)).claims
    assert claim.claimed == 1


@pytest.mark.parametrize("env", ["verbatim", "lstlisting", "verbatim*", "minted}{toml"])
def test_check_skips_annotations_in_latex_verbatim(env, tmp_path, capsys):
    doc = tmp_path / "chapter.tex"
    end = env.split("}")[0]
    doc.write_text(f"\\section{{How}}\n\\begin{{{env}}}\n% symroof: claimed = 7\n"
                   f"% symroof: unit = \"bogus\"\n\\end{{{end}}}\n"
                   "A GEMV at 16 bits is 1 FLOP/B.\n% symroof: claimed = 1\n"
                   "% symroof: unit = \"FLOP/B\"\n% symroof: rounding = {sig = 1}\n"
                   "% symroof: value = {workload = {builder = \"gemv\", args = [\"4096\", "
                   "\"4096\"]}, q = \"I\"}\n% symroof: subs = {b = 2}\n")
    assert main(["check", str(doc)]) == 0, capsys.readouterr()
    (claim,) = annotated_claims(doc.read_text(), str(doc)).claims
    assert claim.line == 7 and claim.section == "How"


@pytest.mark.parametrize("name", ["chapter.TEX", "chapter.Tex", "chapter.LTX"])
def test_check_reads_tex_in_any_case_as_latex(name):
    text = "\\section{S}\nA sentence.\n% symroof: claimed = 1\n% symroof: unit = \"-\"\n"
    (a,) = find_annotations(text, name)
    assert (a.line, a.body, a.section) == (3, ' claimed = 1\n unit = "-"', "S")


@pytest.mark.parametrize("sep", ["\n", "\r\n", "\r"])
def test_check_counts_lines_as_editors_do(sep):
    # form feed, vertical tab, \x1c-\x1e, NEL and U+2028/9 are not line breaks in an editor
    text = sep.join(["# S", "odd \x0c\x0b\x1c\x1d\x1e\x85\u2028\u2029 line", "quoted text",
                     "<!-- symroof claimed = 1", 'unit = "-" -->', "after"])
    (a,) = find_annotations(text, "doc.md")
    assert (a.line, a.quote, a.section) == (4, "quoted text", "S")
    (c,) = annotated_claims(text, "doc.md").claims
    assert c.line == 4


def test_an_unclosed_annotation_names_its_line_with_any_line_breaks():
    text = "a\r\nb\rc\n<!-- symroof claimed = 1\n" + "x\n" * 1000
    with pytest.raises(SymroofError, match=r"doc.md:4: the symroof annotation is never closed"):
        find_annotations(text, "doc.md")


_CONTROLS = "\x1b]0;pwned\x07\x1b[2J\x9b31m\x90x\x9c\x08\x7f\x00\u202e"


def test_check_prints_no_terminal_control_sequence_from_a_document(tmp_path):
    doc = tmp_path / "ch.md"
    doc.write_text(f"# S{_CONTROLS}\nA GEMV {_CONTROLS} is 2 FLOP/B.\n<!-- symroof claimed = 2\n"
                   'unit = "FLOP/B"\nnote = "\\u001b[31m"\n'
                   'value = {workload = {builder = "gemv", args = ["4096", "4096"]}, q = "I"}\n'
                   f'subs = {{b = 2}} -->\nbad {_CONTROLS}\n<!-- symroof claimed = 2\n'
                   'unit = "\\u001b]0;pwned\\u0007\\u009b31m" -->\n')
    for extra in ([], ["--json"]):
        done = subprocess.run([sys.executable, "-m", "symroof", "check", str(doc), *extra],
                              capture_output=True, check=False)
        assert done.returncode == 2
        for stream in (done.stdout, done.stderr):
            text = stream.decode("utf-8")
            assert not [ch for ch in text if (ord(ch) < 0x20 and ch != "\n") or
                        0x7F <= ord(ch) < 0xA0 or ch == "\u202e"], text
        assert b"\\x1b" in done.stdout + done.stderr or b"\\u001b" in done.stdout
        assert done.stderr.count(b"\n") == 1
        if extra:
            rows = json.loads(done.stdout)
            assert rows[0]["quote"].startswith("A GEMV \x1b]0;pwned")  # JSON keeps the text


def test_an_error_line_escapes_controls_from_any_message(capsys):
    from symroof.cli import _error
    assert _error(f"bad {_CONTROLS} end") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not [ch for ch in err[:-1] if ord(ch) < 0x20 or
                                         0x7F <= ord(ch) < 0xA0 or ch == "\u202e"]
    assert "\\x1b]0;pwned\\x07" in err and "\\x9b31m" in err and "\\u202e" in err


def test_annotations_per_document_are_capped_and_the_cap_is_named():
    one = "<!-- symroof claimed = 1 -->\n"
    assert len(find_annotations(one * annotations.MAX_ANNOTATIONS, "d.md")) == \
        annotations.MAX_ANNOTATIONS
    with pytest.raises(SymroofError, match=rf"d.md:{annotations.MAX_ANNOTATIONS + 1}: more than "
                                           rf"{annotations.MAX_ANNOTATIONS:,} annotations"):
        find_annotations(one * (annotations.MAX_ANNOTATIONS + 1), "d.md")


def test_claims_per_file_are_capped_and_the_cap_is_named():
    head, body = EXAMPLE.split("[[claim]]")
    ids = iter(range(10**6))
    many = head + "".join("[[claim]]" + body.replace("gemm-square-8192", f"c{next(ids)}")
                          for _ in range(schema.MAX_CLAIMS + 1))
    with pytest.raises(SymroofError, match=rf"t.toml:\d+: {schema.MAX_CLAIMS + 1:,} claims, more "
                                           rf"than the limit of {schema.MAX_CLAIMS:,}"):
        parse_claims(many, "t.toml")


def test_the_scanners_compute_line_numbers_once(monkeypatch):
    calls: list[int] = []
    real = annotations.line_starts

    def counted(text: str) -> list[int]:
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(annotations, "line_starts", counted)
    doc = "# S\n" + "text\n<!-- symroof claimed = 1\nunit = \"-\" -->\n" * 2000
    found = find_annotations(doc, "d.md")
    assert len(found) == 2000 and found[-1].line == 3 + 3 * 1999 and len(calls) == 1
    calls.clear()
    with pytest.raises(SymroofError, match="d.md:2: the symroof annotation is never closed"):
        find_annotations("x\n<!-- symroof\n" + "line\n" * 100_000, "d.md")
    assert len(calls) == 1


# -- two command-line failures become one line ------------------------------------------------


@pytest.mark.parametrize("argv", [["derive", "decode"], ["eval", "decode", "--hardware", "h100-sxm"]])
def test_a_config_with_a_trillion_layers_is_one_line(tmp_path, capsys, argv):
    cfg = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
           "intermediate_size": 160, "num_hidden_layers": 10**12, "vocab_size": 128}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert main([*argv, "--model", str(tmp_path / "config.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("symroof: error: ")
    assert "num_hidden_layers" in err and "1,000,000,000,000" in err


def test_hardware_list_with_stdout_closed_is_one_line():
    done = subprocess.run(["sh", "-c", f'exec "{sys.executable}" -m symroof hardware list >&-'],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("symroof: error: ")
    assert "standard output is closed" in done.stderr
