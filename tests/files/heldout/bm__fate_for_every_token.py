# exercise: bert_masking
# diagnosis: bm_80_10_10_on_all_tokens
# The fate of every non-special token is drawn (multinomial 80/10/10) and applied whether selected or not.
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids, dtype=torch.long))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    gen = torch.Generator().manual_seed(seed)
    B, T = input_ids.shape
    ordinary = ~special_tokens_mask(input_ids, special_ids)
    chosen = (torch.rand(B, T, generator=gen) < 0.15) & ordinary
    fate = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), B * T, replacement=True, generator=gen).view(B, T)
    noise = torch.randint(vocab_size, (B, T), generator=gen)
    out = input_ids.clone()
    out[ordinary & (fate == 0)] = mask_id
    out[ordinary & (fate == 1)] = noise[ordinary & (fate == 1)]
    return out, torch.where(chosen, input_ids, -100)
