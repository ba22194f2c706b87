# exercise: bert_masking
# diagnosis: bm_one_mask_for_the_batch
# The random numbers are drawn for one row, (1, T), and broadcast over the batch.
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    B, T = input_ids.shape
    u = torch.rand(1, T, generator=g)
    v = torch.rand(1, T, generator=g)
    sel = (u < 0.15) & ~special_tokens_mask(input_ids, special_ids)
    rnd = torch.randint(0, vocab_size, (B, T), generator=g)
    x = input_ids.clone()
    x = torch.where(sel & (v < 0.8), mask_id, x)
    x = torch.where(sel & (v >= 0.8) & (v < 0.9), rnd, x)
    return x, torch.where(sel, input_ids, -100)
