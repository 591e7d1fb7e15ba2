"""Hybrids kvplan does not read yet (model types bamba, zamba, plamo2, minimax, minimax_text_01,
bailing_moe_linear; vLLM's vllm/model_executor/models/bamba.py, plamo2.py, minimax_text_01.py and
their kin): they keep a recurrent (Mamba or linear-attention) state beside their attention whose
layout kvplan does not read from config.json, so a config of theirs is refused, whatever keys it
has, rather than read as attention alone. Their table row declares them (refuses_state); reading
one of them is a module of its own with a state hook, and the model type leaves this row."""
