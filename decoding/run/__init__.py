"""A live speculative-decoding run: draft -> score -> verify -> commit -> record, step by step.

Owns the DecodeConfig, drafting a tree with a verifier's candidate law, the engine's step loop,
and the trace schema (`schema`: StepRecord, Trace, JSON) with the recorder that fills it.
May import `decoding.verify` and `decoding.models`. `schema` imports no torch (viz reads it).
"""
