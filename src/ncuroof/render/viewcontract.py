"""The roofline page's view contract, declared once and read by both Python and the page's script.

A figure carries every view the page can show as traces; which of them are visible depends only on
the page's *state* (:class:`ViewState`: precision view, memory levels, dot groups, colouring,
focus). Each trace says when it is visible in its ``meta["when"]``: a dict from state field to the
value(s) it needs. :func:`visible` is the whole rule:

- state field holds one value, ``when`` one value: they are equal;
- state field holds one value, ``when`` a list: the state's value is in the list;
- state field holds a list (``levels``), ``when`` one value: the value is in the state's list;
- state field holds a list, ``when`` a list: the same members.

A field absent from ``when`` does not matter to that trace. The page's script does not restate
the rule: :func:`apply_view` evaluates it here, field by field, over every value the page's
controls can give that field (:func:`state_domain`), and writes the result into the contract as
data (:func:`shows`): per trace and per control, ``{field: [keys of the values it shows in]}``,
a value's key being :func:`state_key` (its JSON, a list sorted). The script shows a trace when,
for every field listed, the key of the state's value is in the list.

The :class:`ViewContract` also
lists the controls (one per state field, each with its options, shown in the states its own
``when`` allows), the per-state restyles
(colour scales) and relayouts (axes), and is serialised into the figure's ``layout.meta["view"]``,
where the script reads it. So a new view is a new option of a control (or a new state field with its
control) plus traces whose ``when`` names it; no visibility logic is added anywhere. Whole other
charts (the NVTX phases, the instruction roofline: :mod:`ncuroof.views`) are :class:`Chart`
objects that :func:`add_charts` turns into options of a ``chart`` field, with their axes as
that field's relayouts.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = [
    "ViewState",
    "Control",
    "ViewContract",
    "Chart",
    "visible",
    "state_key",
    "state_domain",
    "shows",
    "apply_view",
    "add_charts",
]


@dataclass
class ViewState:
    """What the page shows.

    Attributes
    ----------
    precision : str
        Precision view: ``'main'`` (each kernel at the precision of most of its FLOPs) or a
        precision (``fp32``, ``tensor:<path>``).
    levels : list of str
        Memory levels shown (``l1``, ``l2``, ``dram``).
    mode : str
        Dot group: ``'kernel'`` (one dot per kernel and level) or ``'launch'`` (one per launch).
    color : str
        Dot colouring: ``'kernel'`` or ``'bound'``.
    all : bool
        Also the kernels outside the focus set.
    chart : str
        Which chart the figure shows: ``'roofline'`` (the kernels' FLOP roofline) or the ``id`` of
        a :class:`Chart` added by :func:`add_charts`.
    achievable : bool
        Also the achievable roofs (dashed, beside the peak roofs, never instead of them).
    """

    precision: str = "main"
    levels: list[str] = field(default_factory=list)
    mode: str = "kernel"
    color: str = "kernel"
    all: bool = False
    chart: str = "roofline"
    achievable: bool = True


@dataclass
class Control:
    """One control of the page: it sets the state field ``field``.

    Attributes
    ----------
    id : str
        Element name: ``ctl-<id>`` is the id of a ``select``/single ``checkbox``, the ``name``
        of ``radio`` inputs and the class of ``checkboxes``.
    field : str
        The :class:`ViewState` field it sets.
    kind : {'select', 'radio', 'checkboxes', 'checkbox'}
        ``checkboxes`` set a list field, ``checkbox`` a bool field.
    label : str
        Text before the control (for ``checkbox``, after the box).
    options : list of [value, text]
        The choices (none for ``checkbox``).
    when : dict
        The states it is shown in (:func:`visible`; empty: always), e.g. the precision control
        only while the chart is the FLOP roofline.
    """

    id: str
    field: str
    kind: str
    label: str
    options: list[list[str]] = field(default_factory=list)
    when: dict[str, Any] = field(default_factory=dict)


@dataclass
class ViewContract:
    """The page's view contract: initial state, controls, restyles and dot counts.

    Attributes
    ----------
    state : ViewState
        The view the figure opens with.
    controls : list of Control
        In page order.
    styles : dict
        ``{state field: {value: {trace role: {plotly attribute: value}}}}``: applied to the
        traces of that role whenever the state field has that value (e.g. the dot colour
        scale per colouring).
    layouts : dict
        ``{state field: {value: {plotly layout attribute: value}}}``: relayouts applied whenever
        the state field has that value (e.g. axis titles and ranges of another roofline kind).
    counts : dict of str to int
        Dots per ``<mode>/<precision view>/<focus|rest>`` (for benchmarks and tests).
    customdata : list of str
        The columns of the ``customdata`` of the ``dots`` traces, in order
        (:data:`ncuroof.render.figure.CUSTOMDATA`); the script finds a column's
        index by its name here.
    shows : dict
        The visibility rule evaluated (:func:`apply_view`): ``traces``, one :func:`shows` per trace
        of the figure in order, and ``controls``, one per control; what the script reads.
    """

    state: ViewState
    controls: list[Control] = field(default_factory=list)
    styles: dict[str, dict[str, dict[str, dict[str, Any]]]] = field(default_factory=dict)
    layouts: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    customdata: list[str] = field(default_factory=list)
    shows: dict[str, list[dict[str, list[str]]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (what the page's script reads)."""
        return asdict(self)


@dataclass
class Chart:
    """Another chart the figure can show instead of its own (an option of the ``chart`` control).

    Attributes
    ----------
    id : str
        The ``chart`` value that shows it.
    label : str
        The control's text for it.
    traces : list of plotly traces
        Its traces; ``meta["role"]`` names them (not ``dots``: the details panel reads those) and
        ``meta["when"]`` may name the fields in ``fields``.
    layout : dict
        ``{plotly layout attribute: value}`` while it shows (title, axis titles;
        the axes autorange).
    fields : tuple of str
        Other state fields its traces follow (e.g. ``('levels',)``): their controls show with it.
    """

    id: str
    label: str
    traces: list[Any]
    layout: dict[str, Any] = field(default_factory=dict)
    fields: tuple[str, ...] = ()


def visible(when: dict[str, Any], state: ViewState | dict[str, Any]) -> bool:
    """Whether a trace with visibility conditions ``when`` shows in ``state`` (rule in
    the module docstring).

    Parameters
    ----------
    when : dict
        State field -> value or list of values.
    state : ViewState or dict
        The current state.

    Returns
    -------
    bool

    Raises
    ------
    KeyError
        When ``when`` names a field the state lacks.
    """
    st = asdict(state) if isinstance(state, ViewState) else state
    for key, want in when.items():
        have = st[key]
        if isinstance(have, list):
            ok = set(want) == set(have) if isinstance(want, list) else want in have
        else:
            ok = have in want if isinstance(want, list) else have == want
        if not ok:
            return False
    return True


def state_key(value: Any) -> str:
    """A state value as the page's script keys it: its JSON, a list sorted (a list field's value is
    its members, in any order), e.g. ``'"fp32"'``, ``'["dram","l2"]'``, ``'true'``."""
    value = sorted(value) if isinstance(value, list) else value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def state_domain(contract: ViewContract) -> dict[str, list[Any]]:
    """Every value each state field can take on the page: its initial value and what its control
    sets (a ``select``'s or ``radio``'s options, every subset of a ``checkboxes``' options,
    ``True``/``False`` for a ``checkbox``).

    Parameters
    ----------
    contract : ViewContract

    Returns
    -------
    dict of str to list
        State field -> its values, the initial one first, no repeats (by :func:`state_key`).
    """
    domain: dict[str, list[Any]] = {k: [v] for k, v in asdict(contract.state).items()}
    for c in contract.controls:
        values = [o[0] for o in c.options]
        if c.kind == "checkbox":
            values = [True, False]
        elif c.kind == "checkboxes":
            values = [
                list(sub)
                for r in range(len(values) + 1)
                for sub in itertools.combinations(values, r)
            ]
        have = domain.setdefault(c.field, [])
        seen = {state_key(v) for v in have}
        have += [v for v in values if state_key(v) not in seen]
    return domain


def shows(when: dict[str, Any], domain: dict[str, list[Any]]) -> dict[str, list[str]]:
    """The rule (:func:`visible`) for one ``when``, evaluated over ``domain``: per field that
    ``when`` names, the :func:`state_key` of each value of :func:`state_domain` it holds in.

    Parameters
    ----------
    when : dict
        State field -> value or list of values (a trace's or a control's).
    domain : dict of str to list
        :func:`state_domain` of the contract.

    Returns
    -------
    dict of str to list of str
        A state shows the trace when, for each field here, the key of its value is in the list
        (the conditions are per field, so this equals :func:`visible` in every state of ``domain``).

    Raises
    ------
    KeyError
        When ``when`` names a field the state lacks.
    """
    return {
        key: [state_key(v) for v in domain[key] if visible({key: want}, {key: v})]
        for key, want in when.items()
    }


def apply_view(fig: go.Figure, contract: ViewContract) -> None:
    """Set every trace's ``visible`` from its ``meta["when"]`` and the contract's state, apply
    the state's restyles and relayouts, evaluate the rule for the page (``contract.shows``,
    :func:`shows` of every trace and control) and store the contract in ``fig.layout.meta["view"]``.

    Parameters
    ----------
    fig : Figure
        Traces whose ``meta`` has ``role`` and ``when`` (traces without ``when`` always show).
    contract : ViewContract
        The view to show.
    """
    st = asdict(contract.state)
    for tr in fig.data:
        m = tr.meta if isinstance(tr.meta, dict) else {}
        tr.visible = visible(m.get("when", {}), st)
        for fld, per_value in contract.styles.items():
            patch = per_value.get(str(st[fld]), {}).get(m.get("role", ""))
            for attr, value in (patch or {}).items():
                tr[attr] = value  # a dotted path, as Plotly.restyle takes it
    for fld, per_value in contract.layouts.items():
        for attr, value in per_value.get(str(st[fld]), {}).items():
            fig.layout[attr] = value
    domain = state_domain(contract)
    contract.shows = {
        "traces": [
            shows(tr.meta.get("when", {}) if isinstance(tr.meta, dict) else {}, domain)
            for tr in fig.data
        ],
        "controls": [shows(c.when, domain) for c in contract.controls],
    }
    fig.update_layout(meta=dict(view=contract.to_dict()))


def _own_layout(fig: go.Figure) -> dict[str, Any]:
    """The relayout that brings back the figure's own chart: title, axis titles
    and ranges, notes."""
    lay = fig.layout
    out: dict[str, Any] = {
        "title.text": lay.title.text,
        "xaxis.title.text": lay.xaxis.title.text,
        "yaxis.title.text": lay.yaxis.title.text,
    }
    for ax in ("xaxis", "yaxis"):
        if lay[ax].type is not None:  # a chart with linear axes (speed of light) changes it
            out[f"{ax}.type"] = lay[ax].type
        rng = lay[ax].range
        out.update({f"{ax}.range": list(rng)} if rng is not None else {f"{ax}.autorange": True})
    return out | {f"annotations[{i}].visible": True for i in range(len(lay.annotations))}


def add_charts(fig: go.Figure, contract: ViewContract, charts: list[Chart], label: str) -> None:
    """Put other charts into ``fig`` as options of a ``chart`` control (first in
    ``contract``'s controls).

    The figure's own traces get ``chart = contract.state.chart`` in their ``when``, each chart's
    traces its ``id``; conditions of a chart's traces on fields that no control can switch to the
    needed value are dropped (the trace always shows with its chart). The other controls show
    with the figure's own chart and with the charts that follow their field. ``contract.layouts``
    gets, per ``chart`` value, the chart's title, axes and (for the figure's own) its annotations.
    Call :func:`apply_view` afterwards.

    Parameters
    ----------
    fig : Figure
        The figure with its own chart's traces, layout and annotations.
    contract : ViewContract
        Its view contract; changed in place.
    charts : list of Chart
        Nothing is done when empty.
    label : str
        The control's text for the figure's own chart.
    """
    if not charts:
        return
    own = contract.state.chart
    for tr in fig.data:
        m = tr.meta if isinstance(tr.meta, dict) else {}
        tr.meta = {**m, "when": {**m.get("when", {}), "chart": own}}
    options = {
        c.field: {o[0] for o in c.options} | ({True, False} if c.kind == "checkbox" else set())
        for c in contract.controls
    }
    hide_notes = {f"annotations[{i}].visible": False for i in range(len(fig.layout.annotations))}
    # each chart's axes are the figure's kind (log) unless it says otherwise (a timeline: linear),
    # so that the chart shown after another gets its own back
    kinds = {
        f"{ax}.type": fig.layout[ax].type
        for ax in ("xaxis", "yaxis")
        if fig.layout[ax].type is not None
    }
    # what another field's layouts set (a precision view's axis units) the own chart leaves to them:
    # the page applies every field's layouts again when the chart changes, the chart's last
    theirs = {k for per in contract.layouts.values() for patch in per.values() for k in patch}
    layouts = {own: {k: v for k, v in _own_layout(fig).items() if k not in theirs}}
    for chart in charts:
        for tr in chart.traces:
            m = tr.meta if isinstance(tr.meta, dict) else {}
            when = {
                k: v
                for k, v in m.get("when", {}).items()
                if k in options and set(v if isinstance(v, list) else [v]) <= options[k]
            }
            tr.meta = {**m, "when": {**when, "chart": chart.id}}
        fig.add_traces(chart.traces)
        layouts[chart.id] = {
            "xaxis.autorange": True,
            "yaxis.autorange": True,
            **kinds,
            **hide_notes,
            **chart.layout,
        }
    for ctl in contract.controls:
        ctl.when = {**ctl.when, "chart": [own] + [c.id for c in charts if ctl.field in c.fields]}
    contract.controls.insert(
        0,
        Control(
            "chart", "chart", "radio", "View", [[own, label]] + [[c.id, c.label] for c in charts]
        ),
    )
    contract.layouts["chart"] = layouts
