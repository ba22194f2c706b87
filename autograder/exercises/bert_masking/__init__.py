"""The `bert_masking` exercise: BERT's masked-language-model inputs (special_tokens_mask, mlm_mask)."""
