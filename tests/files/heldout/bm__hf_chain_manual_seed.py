# exercise: bert_masking
# diagnosis: bm_global_manual_seed
# HuggingFace's bernoulli chain, made "reproducible" by seeding the global generator first.
import torch


def special_tokens_mask(input_ids, special_ids):
    out = torch.zeros_like(input_ids, dtype=torch.bool)
    for s in special_ids:
        out |= input_ids == s
    return out


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    torch.manual_seed(seed)
    labels = input_ids.clone()
    probability = torch.full(labels.shape, 0.15)
    probability.masked_fill_(special_tokens_mask(input_ids, special_ids), 0.0)
    masked = torch.bernoulli(probability).bool()
    labels[~masked] = -100
    inputs = input_ids.clone()
    replaced = torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & masked
    inputs[replaced] = mask_id
    random_words = torch.bernoulli(torch.full(labels.shape, 0.5)).bool() & masked & ~replaced
    inputs[random_words] = torch.randint(vocab_size, labels.shape, dtype=torch.long)[random_words]
    return inputs, labels
