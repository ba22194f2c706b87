# exercise: bert_masking
# diagnosis: bm_rates_swapped
# HuggingFace-style with the two probabilities exchanged: select 0.8, then [MASK] 0.15 of those.
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    shape = input_ids.shape
    ok = ~special_tokens_mask(input_ids, special_ids)
    sel = (torch.rand(shape, generator=g) < 0.8) & ok
    fate = torch.rand(shape, generator=g)
    words = torch.randint(0, vocab_size, shape, generator=g)
    out = input_ids.clone()
    out[sel & (fate < 0.15)] = mask_id
    pick = sel & (fate >= 0.15) & (fate < 0.25)
    out[pick] = words[pick]
    lab = torch.full_like(input_ids, -100)
    lab[sel] = input_ids[sel]
    return out, lab
