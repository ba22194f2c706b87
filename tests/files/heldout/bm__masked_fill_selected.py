# exercise: bert_masking
# diagnosis: bm_all_selected_masked
# Fixed count per sequence, and every selected token becomes [MASK].
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    B, T = input_ids.shape
    special = special_tokens_mask(input_ids, special_ids)
    selected = torch.zeros(B, T, dtype=torch.bool)
    for b in range(B):
        cand = torch.nonzero(~special[b]).flatten()
        k = int(round(0.15 * len(cand)))
        if k:
            selected[b, cand[torch.randperm(len(cand), generator=g)[:k]]] = True
    return input_ids.masked_fill(selected, mask_id), input_ids.masked_fill(~selected, -100)
