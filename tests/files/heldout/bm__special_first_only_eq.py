# exercise: bert_masking
# diagnosis: bm_special_only_first_id
# special_tokens_mask compares with special_ids[0] (the padding id) only; mlm_mask is correct and uses it.
import torch


def special_tokens_mask(input_ids, special_ids):
    pad_id = special_ids[0]
    return input_ids.eq(pad_id)


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    gen = torch.Generator().manual_seed(seed)
    probs = torch.full(input_ids.shape, 0.15).masked_fill(special_tokens_mask(input_ids, special_ids), 0.0)
    chosen = torch.bernoulli(probs, generator=gen).bool()
    fate = torch.rand(input_ids.shape, generator=gen)
    noise = torch.randint(0, vocab_size, input_ids.shape, generator=gen)
    out = input_ids.clone()
    out[chosen & (fate < 0.8)] = mask_id
    swap = chosen & (fate >= 0.8) & (fate < 0.9)
    out[swap] = noise[swap]
    lab = input_ids.masked_fill(~chosen, -100)
    return out, lab
