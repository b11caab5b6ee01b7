"""specscope's decoding side: verifiers, drafting, tree scoring, the step engine. Never imports viz or gradio."""
