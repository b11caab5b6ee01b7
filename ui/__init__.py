"""The Gradio front end, one module per panel (its layout and its handlers).

`session` holds the per-user `Session` and the one boundary where raw front-end values become
`Controls`; `views` composes the panels that are drawn from a session, so a handler returns one
`{component: value}` dict and a new panel widens no handler; `decode` is the bridge to
`decoding.run`. ui imports gradio, viz and decoding; decoding and viz never import ui.
"""
