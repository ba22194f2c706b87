# exercise: bert_masking
# diagnosis: bm_random_two_percent
# Three uniform draws compared with 0.15, 0.8 and then 0.1 (not 0.5) for the random replacement.
import torch


def special_tokens_mask(input_ids, special_ids):
    return sum(input_ids == s for s in special_ids).bool()


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    shape = input_ids.shape
    ok = ~special_tokens_mask(input_ids, special_ids)
    a, b, c = (torch.rand(shape, generator=g) for _ in range(3))
    sel = ok & (a < 0.15)
    m = sel & (b < 0.8)
    r = sel & ~m & (c < 0.1)
    tok = torch.randint(0, vocab_size, shape, generator=g)
    inputs = torch.where(m, torch.full_like(input_ids, mask_id), input_ids)
    inputs = torch.where(r, tok, inputs)
    return inputs, torch.where(sel, input_ids, torch.full_like(input_ids, -100))
