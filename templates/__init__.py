"""Jinja2 templates of symroof's reports and charts (installed as ``symroof.templates``).

Templates place values that the library has already computed and formatted; they do
no arithmetic. ``.tex`` templates use LaTeX-safe delimiters (see
:mod:`symroof.present.templates`).
"""
