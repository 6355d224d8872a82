"""A step the user moves with a slider or plays forward on a timer (Masking's generation, Training's snapshots).

Streamlit forbids changing a widget's value after the widget is drawn, so Play does not move the step itself:
a timed fragment asks for a full rerun, and ``current_step`` moves the step at the top of that run, before
the slider is drawn.
"""

from __future__ import annotations

import streamlit as st

from attn_ui import callbacks, slide, url_state

STEP, PLAYING, TICK, FULL_RUN = "step", "playing", "play_tick", "play_full_run"  # session-state keys
PLAY_SECONDS = 1.2  # between two generation steps when playing


def current_step(last: int) -> int:
    """Call before the slider: the step (1 to ``last``), one further if Play asked for it; Play stops at ``last``."""
    if st.session_state.pop(TICK, False) and st.session_state[STEP] < last:
        st.session_state[STEP] += 1
    step = url_state.keep_in(STEP, range(1, last + 1), min(st.session_state[STEP], last))
    if st.session_state.get(PLAYING) and step == last:
        st.session_state[PLAYING] = False
    return step


@callbacks.needing(PLAYING, STEP)
def _start_playing(last: int) -> None:
    """Play from the first step when switched on at the last one."""
    if st.session_state[PLAYING] and st.session_state[STEP] >= last:
        st.session_state[STEP] = 1


def step_controls(
    last: int, label: str = "Generation step t", help: str = "Which tokens the t-th token may see.", lead: str = ""
) -> None:
    """The step's slider and the Play switch, and while playing, the timer that moves the step; ``lead``: the text
    they go with, above them on a page and at their left on a slide (whose height is short)."""
    beside = bool(lead) and slide.presenting()
    if lead and not beside:
        st.markdown(lead)
    with st.container(horizontal=True, vertical_alignment="bottom", wrap=not beside):
        if beside:
            st.markdown(lead, width="stretch")
        if last > 1:
            collapsed = "collapsed" if beside else "visible"  # beside a lead, which says what the step is
            st.slider(label, 1, last, key=STEP, help=help, width=300 if beside else 420, label_visibility=collapsed)
            st.toggle(
                "Play",
                key=PLAYING,
                on_change=_start_playing,
                args=(last,),
                help=f"One step forward every {PLAY_SECONDS:g} s, up to the last.",
            )
        else:
            st.caption("One position only: nothing to step through.")

    @st.fragment(run_every=PLAY_SECONDS if st.session_state.get(PLAYING) else None)
    def ticks() -> None:
        """Every PLAY_SECONDS while playing: ask for the next step. Drawn in a full run, it does nothing."""
        if not st.session_state.get(FULL_RUN):
            st.session_state[TICK] = True
            st.rerun()

    st.session_state[FULL_RUN] = True
    ticks()
    st.session_state[FULL_RUN] = False
