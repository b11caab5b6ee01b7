"""Model pairs and the one-pass tree forward.

Owns loading (hub id, local folder, the embedded SmolLM2 GGUF cache, the toy and lookup pairs),
tokenizer codecs and `TreeLM`: score a whole flattened draft tree in ONE forward with a tree mask,
then keep the accepted path in the KV cache. May import `decoding.verify` (the DraftTree type),
torch and transformers; never `decoding.run`.
"""
