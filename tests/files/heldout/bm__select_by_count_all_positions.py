# exercise: bert_masking
# diagnosis: bm_padding_selected
# Original-BERT style fixed count, but the candidates are all positions, padding and [CLS]/[SEP] included.
import torch


def special_tokens_mask(input_ids, special_ids):
    return (input_ids[..., None] == torch.tensor(special_ids)).any(-1)


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    B, T = input_ids.shape
    k = int(round(0.15 * T))
    selected = torch.zeros(B, T, dtype=torch.bool)
    for b in range(B):
        selected[b, torch.randperm(T, generator=g)[:k]] = True
    u = torch.rand(B, T, generator=g)
    rnd = torch.randint(0, vocab_size, (B, T), generator=g)
    inputs = input_ids.clone()
    inputs[selected & (u < 0.8)] = mask_id
    r = selected & (u >= 0.8) & (u < 0.9)
    inputs[r] = rnd[r]
    return inputs, input_ids.masked_fill(~selected, -100)
