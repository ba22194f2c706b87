# exercise: bert_masking
# diagnosis: none
# Not catalogued: random replacements drawn from [0, 10) only (the vocabulary size read as 10).
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    sel = (torch.rand(input_ids.shape, generator=g) < 0.15) & ~special_tokens_mask(input_ids, special_ids)
    u = torch.rand(input_ids.shape, generator=g)
    rnd = torch.randint(0, 10, input_ids.shape, generator=g)
    inputs = torch.where(sel & (u < 0.8), mask_id, input_ids)
    inputs = torch.where(sel & (u >= 0.8) & (u < 0.9), rnd, inputs)
    return inputs, torch.where(sel, input_ids, -100)
