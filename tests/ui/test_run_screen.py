"""The run screen a bench tester reads at 80x25 (#24 items 2 and 5): a whole-plan ETA that
follows the drive's measured speed, the running stage always in view, probes in MiB/s,
nothing cut or wrapped."""

from __future__ import annotations

from rich.console import Console

from ssdbench.progress import Progress
from ssdbench.ui.state import DriveRunState
from ssdbench.ui.widgets import chart_series, stage_progress

TRIM = ["erase", "probe-clean", "fill", "torture", "settle", "probe-after_torture", "trim",
        "probe-after_trim"]


def trim_state(estimates: dict[str, float] | None = None,
               assumed_write_mib_s: float | None = None) -> DriveRunState:
    st = DriveRunState.planned("loop0", [("trim", s) for s in TRIM])
    if estimates is not None:
        st.set_estimates({("trim", s): v for s, v in estimates.items()},
                         assumed_write_mib_s=assumed_write_mib_s)
    return st


def ev(stage: str, state: str = "running", **kw: object) -> Progress:
    return Progress("loop0", "trim", stage, state, **kw)  # type: ignore[arg-type]


def test_the_plan_eta_sums_what_is_left_and_drops_as_stages_finish() -> None:
    st = trim_state({"erase": 10, "probe-clean": 5, "fill": 100, "torture": 60, "settle": 10,
                     "probe-after_torture": 5, "trim": 20, "probe-after_trim": 5})
    assert st.plan_eta_s == 215
    st.apply(ev("erase", message="started"))
    st.apply(ev("erase", fraction=0.5, elapsed_s=4.0, eta_s=4.0))
    assert st.plan_eta_s == 4 + 205
    st.apply(ev("erase", "done"))
    assert st.plan_eta_s == 205


def test_the_plan_eta_follows_the_speed_the_fill_measures() -> None:
    """The plan screen assumed 300 MiB/s; the drive writes at 30: every write-bound stage
    still to come takes ten times longer (the issue's 2m31s estimate for a 6m53s run)."""
    st = trim_state({"erase": 0, "probe-clean": 0, "fill": 100, "torture": 60, "settle": 10,
                     "probe-after_torture": 5, "trim": 20, "probe-after_trim": 5},
                    assumed_write_mib_s=300.0)
    for stage in ("erase", "probe-clean"):
        st.apply(ev(stage, "done"))
    st.apply(ev("fill", message="started"))
    for t in range(1, 6):
        st.apply(ev("fill", fraction=t / 1000, elapsed_s=float(t), mib_s=30.0))
    eta = st.plan_eta_s
    assert eta is not None
    # fill: its own rate over what is left; probes x10; the rest as planned
    assert eta >= 60 + 10 + 50 + 20 + 50, eta
    assert "measured" in st.plan_eta_basis


def test_a_probe_stays_in_mib_s_after_the_run_ends() -> None:
    st = trim_state()
    st.apply(ev("probe-after_trim", message="started"))
    for t in range(1, 17):
        st.apply(ev("probe-after_trim", elapsed_s=float(t), iops=1.0, mib_s=16.0 + t))
    st.apply(ev("probe-after_trim", message="result", elapsed_s=16.5, iops=1.0, mib_s=24.0))
    st.apply(ev("probe-after_trim", "done"))
    st.finished("done")
    values, title = chart_series(st)
    assert title == "MiB/s" and max(values) > 16


def test_the_stage_line_fits_the_panel_without_wrapping() -> None:
    st = trim_state({s: 60.0 for s in TRIM})
    st.apply(ev("probe-after_torture", message="started"))
    st.apply(ev("probe-after_torture", fraction=0.42, elapsed_s=3725.0, eta_s=12000.0,
                mib_s=20.0))
    console = Console(width=200, record=True)  # no wrapping: see each line's own length
    console.print(stage_progress(st, 44))
    lines = console.export_text().splitlines()
    assert "probe-after_torture" in lines[0] and "42%" in lines[0] and "ETA 3h20m" in lines[0]
    assert "elapsed 1h02m" in lines[1] and "plan ETA" in lines[1]
    assert all(len(line.rstrip()) <= 44 for line in lines), lines  # the 80x25 panel's width


async def test_the_running_stage_is_in_view_at_80x25() -> None:
    from textual.containers import VerticalScroll
    from textual.widgets import Static

    from ssdbench.ui.run import RunScreen
    from tests.ui.conftest import make_app

    consistency = ["erase", "fill", "torture"]
    st = DriveRunState.planned(
        "loop0", [("consistency-default", s) for s in consistency]
        + [("consistency-op25", s) for s in ["erase", "partition", *consistency[1:]]]
        + [("trim", s) for s in TRIM])
    for run, stage in [(s.run, s.name) for s in st.stages][:-3]:
        st.apply(Progress("loop0", run, stage, "done"))
    st.apply(ev("probe-after_torture", message="started"))
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen = RunScreen({"loop0": st})
        app.push_screen(screen)
        await pilot.pause()
        screen.refresh_drive("loop0")
        await pilot.pause()
        pane = screen.query_one("#stages-pane", VerticalScroll)
        text = str(screen.query_one("#stages", Static).content).splitlines()
        line = next(i for i, t in enumerate(text) if t.startswith(" > "))
        assert pane.scroll_y <= line < pane.scroll_y + pane.size.height, (
            line, pane.scroll_y, pane.size.height)


def test_a_probe_reads_in_mib_s_not_iops() -> None:
    from ssdbench.ui.widgets import numbers

    st = trim_state()
    st.apply(ev("probe-clean", message="started"))
    for t in range(1, 4):
        st.apply(ev("probe-clean", elapsed_s=float(t), iops=1.0, mib_s=300.0))
    text = numbers(st).plain
    assert text.startswith("MiB/s now 300.0") and "IOPS" not in text, text
