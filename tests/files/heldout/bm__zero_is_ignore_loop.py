# exercise: bert_masking
# diagnosis: bm_ignore_label_zero
# Labels start as zeros ("ignore"), the original token is written where selected.
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.as_tensor(special_ids, dtype=input_ids.dtype))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    B, T = input_ids.shape
    special = special_tokens_mask(input_ids, special_ids)
    p_sel = torch.rand(B, T, generator=g)
    p_rep = torch.rand(B, T, generator=g)
    rand_tok = torch.randint(0, vocab_size, (B, T), generator=g)
    inputs = input_ids.clone()
    labels = torch.zeros_like(input_ids)
    for b in range(B):
        for t in range(T):
            if special[b, t] or p_sel[b, t] >= 0.15:
                continue
            labels[b, t] = input_ids[b, t]
            if p_rep[b, t] < 0.8:
                inputs[b, t] = mask_id
            elif p_rep[b, t] < 0.9:
                inputs[b, t] = rand_tok[b, t]
    return inputs, labels
