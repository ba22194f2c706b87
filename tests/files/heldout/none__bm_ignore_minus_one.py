# exercise: bert_masking
# diagnosis: none
# Not catalogued: -1 instead of -100 for "ignore".
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    sel = (torch.rand(input_ids.shape, generator=g) < 0.15) & ~special_tokens_mask(input_ids, special_ids)
    u = torch.rand(input_ids.shape, generator=g)
    rnd = torch.randint(0, vocab_size, input_ids.shape, generator=g)
    inputs = torch.where(sel & (u < 0.8), mask_id, input_ids)
    inputs = torch.where(sel & (u >= 0.8) & (u < 0.9), rnd, inputs)
    return inputs, torch.where(sel, input_ids, -1)
