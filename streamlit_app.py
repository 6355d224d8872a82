"""Attention Explorer: the home page and map of the views.

`streamlit run streamlit_app.py` imports this file as a module and serves the ``app`` it finds (an st.App, whose start
imports the views' libraries: attn_ui.startup); each visit to the home page then runs the file as a script, as AppTest
does.
"""

import streamlit as st

from attn_ui import startup

if __name__ != "__main__":  # the server's start
    app = st.App(__file__, lifespan=startup.lifespan)
else:  # a run of the home page
    from attn_ui import lessons, page
    from attn_ui.inputs import escape_markdown

    page.setup(page.HOME)
    st.title("Attention Explorer")
    page.report_ignored()
    st.markdown(
        "See self-attention work, with every number on screen: how token embeddings become queries, "
        "keys and values, how scores turn into weights, and how the weights mix the values into "
        "context vectors. Every view runs a small attention engine written in PyTorch, checked "
        "against PyTorch's own `scaled_dot_product_attention`."
    )
    st.latex(r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V")

    st.subheader("The views")
    for view in page.VIEWS:
        st.page_link(view.path, label=view.label, icon=view.icon)
        st.caption(view.summary)

    st.markdown(
        "Each view is a sequence of numbered sections: a row of buttons under its introduction picks one, and the last, "
        "**All sections**, shows them all on one page."
    )

    st.subheader("Presenting")
    st.markdown(
        "Switch on **Presenter mode** in a view's sidebar (or add `?present=on` to its address): the view shows one "
        "section per screen in large type, the controls move into a popover, and **→** / **←** (or a presentation "
        "clicker's PageDown / PageUp) step through. The current step is in the address, so a link opens at that step."
    )

    st.subheader("Lessons")
    st.markdown(
        "A lesson walks a lecture across views, slide by slide, with the presenter's notes in *Controls*; → and ← go "
        "from one step to the next. Build your own from any slide (*Add this slide to the lesson*) and the sidebar's "
        "*Build a lesson*."
    )
    for name, lesson in lessons.shipped().items():
        st.page_link(
            "streamlit_app.py",
            label=f"{escape_markdown(lesson.title)} ({len(lesson.steps)} steps)",
            icon=":material/school:",
            query_params={"lesson": name},
        )

    st.subheader("Sharing what you see")
    st.markdown(
        "Every control of a view is kept in the page's address, so copying the URL shares exactly what "
        "is on screen, e.g. `/Pipeline?preset=playing-outside`."
    )
