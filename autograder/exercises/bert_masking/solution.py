"""Reference solution: BERT's masked-language-model masking / 参考答案：BERT 的掩码语言模型遮盖.

1. select: every token that is not special (padding, [CLS], [SEP], [MASK], ...) is selected on its
   own with probability 0.15;
2. replace each selected token: 80% [MASK], 10% a random token uniform in [0, V), 10% unchanged;
3. labels: the original token where selected, -100 (ignored by the loss) everywhere else.
All randomness comes from torch.Generator().manual_seed(seed): the same seed, the same result.
"""
import torch


def special_tokens_mask(input_ids, special_ids):
    """True where input_ids[b, t] is one of special_ids."""
    special = torch.tensor(list(special_ids), dtype=input_ids.dtype, device=input_ids.device)  # (S,)
    return torch.isin(input_ids, special)  # (B, T) bool


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    """Select 15% of the non-special tokens; 80% -> mask_id, 10% -> random, 10% kept; labels -100 elsewhere."""
    g = torch.Generator(device=input_ids.device).manual_seed(seed)
    shape = input_ids.shape  # (B, T)
    can = ~special_tokens_mask(input_ids, special_ids)  # (B, T)  may be selected
    selected = (torch.rand(shape, generator=g, device=input_ids.device) < 0.15) & can  # (B, T)
    u = torch.rand(shape, generator=g, device=input_ids.device)  # (B, T)  one draw decides the replacement
    to_mask = selected & (u < 0.8)  # 80%
    to_random = selected & (u >= 0.8) & (u < 0.9)  # 10%; the last 10% stay unchanged
    random_ids = torch.randint(0, vocab_size, shape, generator=g, device=input_ids.device, dtype=input_ids.dtype)
    inputs = torch.where(to_mask, torch.full_like(input_ids, mask_id), input_ids)  # (B, T)
    inputs = torch.where(to_random, random_ids, inputs)  # (B, T)
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))  # (B, T)  -100: ignored by the loss
    return inputs, labels
