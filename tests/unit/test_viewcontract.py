"""The view-visibility rule lives once, in ncuroof.render.viewcontract.visible: the page's script
reads it evaluated (the contract's ``shows``), so the lookup must equal the rule in every state the
page can reach, and the script must not read the traces' ``when`` itself."""

from __future__ import annotations

import itertools
from importlib import resources

import plotly.graph_objects as go

import ncuroof
from ncuroof.render.viewcontract import (
    Chart,
    Control,
    ViewContract,
    ViewState,
    apply_view,
    state_domain,
    state_key,
    visible,
)
from tests.helpers import synthetic


def _lookup(entry: dict[str, list[str]], state: dict) -> bool:
    """What roofline.js does with a ``shows`` entry (a second path to compare the rule with)."""
    return all(state_key(state[f]) in keys for f, keys in entry.items())


def _every_state(contract_dict: dict, domain: dict) -> list[dict]:
    fields = list(domain)
    return [dict(zip(fields, vs)) for vs in itertools.product(*(domain[f] for f in fields))]


def test_shows_equals_visible_in_every_state_of_a_small_contract():
    """The four cases of the rule (one value or a list, on either side) and a
    field no control sets."""
    whens = [
        {"levels": "l1"},
        {"levels": ["l2", "l1"]},
        {"precision": ["fp32", "main"], "all": True},
        {"mode": "launch", "levels": "dram"},
        {"color": "bound"},
        {"chart": "roofline"},
        {},
    ]
    fig = go.Figure([go.Scatter(x=[1], y=[1], meta={"role": "o", "when": w}) for w in whens])
    contract = ViewContract(
        ViewState(precision="main", levels=["l1", "dram"]),
        [
            Control("precision", "precision", "select", "P", [["main", "m"], ["fp32", "f"]]),
            Control(
                "level", "levels", "checkboxes", "L", [["l1", "L1"], ["l2", "L2"], ["dram", "D"]]
            ),
            Control("mode", "mode", "radio", "Dots", [["kernel", "k"], ["launch", "l"]]),
            Control("all", "all", "checkbox", "all", when={"mode": "kernel"}),
        ],
    )
    apply_view(fig, contract)
    view = fig.layout.meta["view"]
    domain = state_domain(contract)
    assert len(domain["levels"]) == 8 and domain["all"] == [False, True]
    assert domain["color"] == ["kernel"]  # no control: the initial value only
    states = _every_state(view, domain)
    assert len(states) == 2 * 8 * 2 * 2
    for st in states:
        assert [_lookup(e, st) for e in view["shows"]["traces"]] == [visible(w, st) for w in whens]
        assert [_lookup(e, st) for e in view["shows"]["controls"]] == [
            visible(c["when"], st) for c in view["controls"]
        ]
    assert [t.visible for t in fig.data] == [
        _lookup(e, view["state"]) for e in view["shows"]["traces"]
    ]


def test_shows_equals_visible_on_a_real_figure_with_another_chart():
    """A synthetic analysis' roofline with another chart added: every trace in
    every reachable state."""
    k = synthetic.kernels_table(60, 8, seed=3)
    other = Chart(
        "other", "Other", [go.Scatter(x=[1], y=[2], meta={"role": "o", "when": {"levels": "l1"}})]
    )
    fig = ncuroof.plot_roofline(ncuroof.points(k), k, charts=[other])
    view = fig.layout.meta["view"]
    contract = ViewContract(
        ViewState(**view["state"]),
        [Control(**c) for c in view["controls"]],
    )
    whens = [t.meta.get("when", {}) for t in fig.data]
    assert len(view["shows"]["traces"]) == len(fig.data)
    for st in _every_state(view, state_domain(contract)):
        assert [_lookup(e, st) for e in view["shows"]["traces"]] == [visible(w, st) for w in whens]


def test_the_script_does_not_restate_the_rule():
    """roofline.js reads the evaluated rule (``view.shows``), never a trace's or
    control's ``when``."""
    js = resources.files("ncuroof.render").joinpath("assets", "roofline.js").read_text()
    assert "view.shows" in js and ".when" not in js
