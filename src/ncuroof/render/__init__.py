"""Renderers: the roofline figure, the page, the terminal text.

Takes the tables of :mod:`ncuroof.model` and :mod:`ncuroof.runs`; gives the plotly figure and
its view contract (:mod:`.figure`, :mod:`.viewcontract`, :mod:`.views`), the self-contained
HTML page (:mod:`.page`, with ``templates/`` and ``assets/``), the CLI's text (:mod:`.text`)
and where each number came from (:mod:`.provenance`). Numbers are formatted by
:mod:`ncuroof.fmt`, which the model's notes use too.
"""
