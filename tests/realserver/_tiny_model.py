"""A tiny random-weight Llama, built offline at test time: a byte-level BPE tokenizer trained here with
``tokenizers`` and a 2-layer, hidden-64 ``LlamaConfig``, saved with ``save_pretrained`` into one folder."""

from __future__ import annotations

from pathlib import Path

_CORPUS = (
    "The quick brown fox jumps over the lazy dog. Hello there, how are you today? "
    "HolySheep serves many models through one OpenAI-compatible API. Batch inference keeps order. "
    "Streams report time to first token and tokens per second. Fallbacks take over when a primary fails. "
)
SPECIAL = ["<s>", "</s>", "<pad>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def build_tiny_llama(folder: Path) -> Path:
    """Write the model and tokenizer into ``folder`` and return it. Seeded: the same bytes every run."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([_CORPUS * 20], trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   model_input_names=["input_ids", "attention_mask"])  # Llama takes no token_type_ids
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
                         bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
                         pad_token_id=fast.pad_token_id, tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # random weights emit mostly special tokens: silence all but EOS so text comes out
        for token_id in (fast.bos_token_id, fast.pad_token_id):
            model.lm_head.weight[token_id].zero_()
    model.generation_config.max_new_tokens = 16
    model.save_pretrained(folder)
    return folder
