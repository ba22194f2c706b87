"""Every student-facing word of the reports, once per language: the message catalogue.

    say(key, language, **fields)   the text of `key` in zh, en, or both ("中文 / English")
    pair(key, **fields)            (zh, en) of `key`
    pick(language, zh, en)         a (zh, en) pair from elsewhere (a property, a catalogued mistake)
    label(text, language)          a label a property gave a value it shows ("期望 expected mask")
                                   in one language ("期望 mask" / "expected mask")
    value(text, language)          a free-text value a property wrote in both languages
                                   ("中文 / English" or Chinese lines, then English lines), in one

The renderers (text.py, feedback.py, html.py, markdown.py, terminal.py, plots.py, dashboard.py) and
the Gradescope / nbgrader outputs take their own words from MESSAGES and nothing else; what the
properties and the catalogued mistakes say comes with both languages already (message_zh /
message_en, title_zh / title_en ...).  The labels of the values a property shows ("调用 call",
"期望 expected mask", "logits（原始 original）") are stored bilingual in the JSON, as before; `label`
turns them into one language with the GLOSSARY below and a few general rules, so a new property
needs no change here as long as its labels follow one of the forms listed at `label`.

In `both`, Chinese comes first and English beside it, never the same words twice.
"""

import re

# ---------------------------------------------------------------- the catalogue

MESSAGES = {  # key: (zh, en) or (zh, en, the short form for both)
    # the page
    "report.title": ("成绩报告", "Grade report"),
    "report.submission": ("提交的文件", "Submission"),
    "report.score": ("总分", "Score"),
    "report.not_graded": ("未评分", "Not graded"),
    "report.not_graded_why": (
        "这份提交没有被评分（这不是 0 分）：",
        "This submission was not graded (this is not a zero): ",
    ),
    "report.not_graded_next": (
        "修好上面的问题后重新提交；如果你认为这是评分器的问题，请联系助教。",
        "Fix the problem above and submit again; if you think the grader is at fault, tell the teaching staff.",
    ),
    "report.all_passed": ("全部测试通过！", "Every test passed!"),
    "report.to_fix": ("要修改的地方", "What to fix"),
    "report.to_fix_count": ("{n} 个函数要修改", "{n} function(s) to fix"),
    "report.lost": ("扣 {points} 分", "−{points} points", "−{points} 分 points"),
    "report.n_tests": ("{n} 个测试没通过", "{n} failed test(s)", "{n} 个测试没通过 failed"),
    "report.details_link": ("详情", "details"),
    "report.scores": ("各练习得分", "Scores per exercise"),
    "report.exercise": ("练习", "Exercise"),
    "report.exercise_test": ("练习 / 测试", "Exercise / test"),
    "report.status": ("状态", "Status"),
    "report.points": ("得分", "Score"),
    "report.passed_of": ("{p}/{n} 通过", "{p}/{n} passed", "{p}/{n} 通过 passed"),
    "report.every_test": ("每个测试的得分", "Every test's score"),
    "report.load_problems": ("加载提交时的问题", "Problems while loading the submission"),
    "report.details": ("详情：按函数", "Details, function by function"),
    "report.in_function": (
        "问题在 `{fn}` 里（{tests} 的测试也因此失败）",
        "The mistake is in `{fn}` (so tests of {tests} fail too)",
    ),
    "report.other_tests": (
        "同一个函数的其他 {n} 个失败的测试（点击展开）",
        "{n} more failed test(s) of this function (click to open)",
    ),
    "report.same_diagnosis": ("诊断同上", "same diagnosis as above"),
    "report.test_of": ("测试", "test"),
    # a test
    "test.must_hold": ("要求", "Must hold"),
    "test.fails": ("没有满足：{prop}", "fails: {prop}"),
    "test.hint": ("提示", "Hint"),
    "test.more": ("更多信息", "More information"),
    "test.not_graded": ("未评分：{reason}", "not graded: {reason}"),
    # a named mistake
    "diagnosis.head": (
        "诊断：你的代码很可能犯了这个常见错误",
        "Diagnosis: your code most likely makes this common mistake",
    ),
    "diagnosis.short": ("诊断", "Diagnosis"),
    "diagnosis.fix": ("怎么改", "How to fix it"),
    "diagnosis.likely": ("可能的错误", "likely mistakes"),
    "diagnosis.in_function": ("（在 `{fn}` 里）", " (in `{fn}`)"),
    "diagnosis.in_part": (
        "（在粘贴进来的 `{fn}` 里，来自{exercise}练习）",
        " (in the pasted part `{fn}`, from the {ex} exercise)",
    ),
    # an explanation by part (autograder/diagnose/parts/): what differs, found by experiment
    "part.head": ("哪一部分不同（由实验得出）", "Which part differs (found by experiment)"),
    "part.shown_by": ("例如 `{call}`", "e.g. `{call}`"),
    "part.also_else": ("另外还有别的不同之处。", "Something else differs as well."),
    "part.cell_zero": (
        "你的单元在把 `{param}` 设为 0 时与参考一致",
        "your cell matches the reference when `{param}` is set to 0",
    ),
    "part.cell_double": (
        "你的单元在把 `{param}` 乘以 2 时与参考一致",
        "your cell matches the reference when `{param}` is doubled",
    ),
    "part.cell_negate": (
        "你的单元在把 `{param}` 取相反数时与参考一致",
        "your cell matches the reference when the sign of `{param}` is flipped",
    ),
    "part.cell_block_zero": (
        "你的单元在把 `{param}` 的 {gate} 块设为 0 时与参考一致",
        "your cell matches the reference when the {gate} block of `{param}` is set to 0",
    ),
    "part.cell_block_double": (
        "你的单元在把 `{param}` 的 {gate} 块乘以 2 时与参考一致",
        "your cell matches the reference when the {gate} block of `{param}` is doubled",
    ),
    "part.cell_block_negate": (
        "你的单元在把 `{param}` 的 {gate} 块取相反数时与参考一致",
        "your cell matches the reference when the sign of the {gate} block of `{param}` is flipped",
    ),
    "part.cell_replaced": (
        "你的单元在把 `{a}` 换成 `{b}` 时与参考一致",
        "your cell matches the reference when `{a}` is replaced by `{b}`",
    ),
    "part.cell_swap_all": (
        "你的单元在把 {g1} 和 {g2} 两个门的块（在每个权重和偏置里）互换时与参考一致",
        "your cell matches the reference when the {g1} and {g2} gate blocks are swapped in every weight and bias",
    ),
    "part.cell_swap_one": (
        "你的单元在把 `{param}` 里 {g1} 和 {g2} 两个块互换时与参考一致",
        "your cell matches the reference when the {g1} and {g2} blocks of `{param}` are swapped",
    ),
    "part.cell_block_copied": (
        "你的单元在把 `{param}` 的 {gate} 块换成 {other} 块的副本时与参考一致",
        "your cell matches the reference when the {gate} block of `{param}` is replaced by a copy of its {other} block",
    ),
    "part.cell_activation": (
        "你的单元在 {gate} 门用 {got} 而不是 {want} 时与参考一致",
        "your cell matches the reference when gate {gate} goes through {got} instead of {want}",
    ),
    "part.gru_b_hn_outside": (
        "你的单元在把 b_hn 放到重置门 r 外面时与参考一致：r * (W_hn h) + b_hn，而不是 r * (W_hn h + b_hn)",
        "your cell matches the reference when b_hn is added outside the reset gate: "
        "r * (W_hn h) + b_hn instead of r * (W_hn h + b_hn)",
    ),
    "part.cell_state_zero": (
        "你的单元在把上一步的 `{state}` 设为 0 时与参考一致",
        "your cell matches the reference when the previous `{state}` is set to 0",
    ),
    "part.gru_carry_zero": (
        "你的单元在去掉 h_new 里的 z * h 一项时与参考一致",
        "your cell matches the reference when the carried term z * h is left out of h_new",
    ),
    "part.seq_state_at_T": (
        "{which} 在填充步也被更新了：比 T 短的序列返回的是第 T 步之后的状态，而不是它自己最后一个有效步之后的",
        "{which} keep updating at padded steps: for the sequences shorter than T you return the state "
        "after step T, not after their own last valid step",
    ),
    "part.seq_state_early": (
        "{which} 取早了一步：返回的是每个序列最后一个有效步之前的状态",
        "{which} is taken one step early: the state before each sequence's last valid step",
    ),
    "part.seq_state_late": (
        "{which} 取晚了一步：比 T 短的序列返回的是第一个填充步之后的状态",
        "{which} is taken one step late: for the sequences shorter than T, the state after their first padded step",
    ),
    "part.seq_pad_holds": (
        "填充步的输出不是 0，而是保持着的状态 h",
        "the outputs at padded steps are not 0 but the held state h",
    ),
    "part.seq_pad_computed": (
        "填充步的输出不是 0，而是在填充的 X 上算出来的 h",
        "the outputs at padded steps are not 0 but the h computed from the padded X",
    ),
    "part.seq_pad_continued": (
        "填充步的输出不是 0，而是状态在填充步继续更新时的 h（最终状态是对的）",
        "the outputs at padded steps are not 0 but the h of a state that keeps running through the padding",
    ),
    "part.seq_initial_ignored": (
        "传入的初始状态 {which} 被忽略了（当成了 0）",
        "the initial state {which} you are given is ignored (taken as 0)",
    ),
    "part.seq_state_in_place": (
        "你原地修改了传入的初始状态 (h0, c0)：只有传了初始状态的调用这样失败",
        "you write into the initial state (h0, c0) you are given, in place: only the calls given a state fail so",
    ),
    "part.mask_on": (
        "你的掩码等于参考掩码把{where_zh}全部设为 True 之后的结果",
        "your mask is the reference's with {where_en} all set to True",
    ),
    "part.mask_off": (
        "你的掩码等于参考掩码把{where_zh}全部设为 False 之后的结果",
        "your mask is the reference's with {where_en} all set to False",
    ),
    "part.mask_flip": (
        "你的掩码等于参考掩码把{where_zh}取反（True ↔ False）之后的结果",
        "your mask is the reference's with {where_en} flipped (True ↔ False)",
    ),
    "part.pe_where": (
        "你的编码只在{cols_zh}{pos_zh}与参考不同",
        "your encoding differs from the reference only in {cols_en}{pos_en}",
    ),
    "part.pe_where_added": (
        "你加到 X 上的编码只在{cols_zh}{pos_zh}与参考不同",
        "what you add to X differs from the encoding only in {cols_en}{pos_en}",
    ),
    "part.pe_cols_even": ("偶数列（sin）", "the even columns (sin)"),
    "part.pe_cols_odd": ("奇数列（cos）", "the odd columns (cos)"),
    "part.pe_cols_all": ("所有列", "all columns"),
    "part.pe_pos_zero": ("，而且只在位置 0", ", and only at position 0"),
    "part.pe_pos_after_zero": (
        "，而且只在位置 t ≥ 1（位置 0 是对的）",
        ", and only at positions t ≥ 1 (position 0 is right)",
    ),
    "part.pe_dtype_only": (
        "数值与参考一致，只有 dtype 不对：你的是 {got}，应为 {want}",
        "the values match the reference; only the dtype differs: yours is {got}, it should be {want}",
    ),
    "part.form_dtype": (
        "`{fn}` 返回的{out_zh}的 dtype 是 {got}，应为 {want}",
        "the dtype of {out_en} of `{fn}` is {got}, expected {want}",
    ),
    "part.form_shape": (
        "`{fn}` 返回的{out_zh}的形状是 {got}，应为 {want}{rel_zh}",
        "the shape of {out_en} of `{fn}` is {got}, expected {want}{rel_en}",
    ),
    "part.form_rel_transposed": ("（数值是参考结果的转置）", " (its values are the reference's, transposed)"),
    "part.form_rel_cut": (
        "（数值是参考结果沿第 {axis} 维截取的前 {n} 个）",
        " (its values are the reference's, cut to the first {n} along axis {axis})",
    ),
    "part.form_type": (
        "`{fn}` 返回的{out_zh}是 Python 的 {got}，应为 torch.Tensor",
        "{out_en} of `{fn}` is a Python {got}, expected a torch.Tensor",
    ),
    "part.form_nograd": (
        "`{fn}` 返回的{out_zh}没有梯度：它与输入的计算图断开了（例如由 `.item()` 重新构造，或用了 detach）",
        "{out_en} of `{fn}` carries no gradient: it is cut from the inputs' graph "
        "(rebuilt from `.item()`, or detached)",
    ),
    "part.form_inplace": ("`{fn}` 原地修改了它的参数 `{arg}`", "`{fn}` writes into its argument `{arg}` in place"),
    "part.form_inplace_some": ("`{fn}` 原地修改了它的某个输入", "`{fn}` writes into one of its inputs in place"),
    "part.form_accepts": (
        "合同要求 `{call}` 抛出 ValueError，你的函数却接受了它",
        "the contract says `{call}` raises ValueError; yours accepts it",
    ),
    "part.form_rejects": (
        "`{call}` 是合同允许的调用，你的函数却抛出了 ValueError",
        "`{call}` is a call the contract allows; yours raises ValueError",
    ),
    "part.loss_softmax_first": (
        "你的损失等于把 softmax(logits) 当作 logits 传给 cross_entropy 的结果：softmax 被做了两次"
        "（cross_entropy 自己会做 log_softmax）",
        "your loss equals cross_entropy given softmax(logits) as its scores: the softmax is "
        "applied twice (cross_entropy applies log_softmax itself)",
    ),
    "part.rope_offset_ignored": (
        "你的结果等于 offset 取 0 时的参考结果：参数 offset 被忽略了",
        "your result equals the reference's with offset 0: the offset argument is ignored",
    ),
    "part.rope_positions_axis": (
        "你的结果等于位置沿第 {axis} 维计数时的参考结果，而不是沿 T 轴（倒数第二维）",
        "your result equals the reference's with positions counted along axis {axis} "
        "instead of the T axis (the second to last)",
    ),
    "part.rope_T_from_axis": (
        "你的结果等于用 x.shape[{axis}] 当作 T 算角度时的参考结果（T 应取 x.shape[-2]）",
        "your result equals the reference's with T taken from x.shape[{axis}] for the angles (T is x.shape[-2])",
    ),
    "part.ts_horizon_ignored": (
        "你的目标等于 horizon 取 1 时的：每个窗口的目标总是下一步，horizon 被忽略了",
        "your targets are those of horizon 1: each window's target is always the next step, the horizon is ignored",
    ),
    "part.ts_horizon_one": (
        "你的结果等于 sliding_windows(series, window, 1)：horizon 被忽略了（窗口数也是 horizon 为 1 时的）",
        "your result equals sliding_windows(series, window, 1): the horizon is ignored (the number of windows too)",
    ),
    "part.ts_across_boundary": (
        "你的测试窗口跨过了训练和测试的分界：先把整个序列切成窗口，目标在测试期的窗口都进了测试集，"
        "其中一些窗口的输入来自训练期",
        "your test windows cross the boundary between the periods: the whole series is "
        "windowed and every window whose target lies in the test period goes to the test set, "
        "some of them with inputs from the training period",
    ),
    "part.mlm_special": (
        "特殊词元 {ids} 会被选中或被替换（合同要求特殊词元从不被选中；仍受保护的：{kept}）",
        "the special tokens {ids} get selected or replaced (the contract never selects a special "
        "token; still protected: {kept})",
    ),
    "part.mlm_label_value": (
        "没有被选中的位置标签是 {value}，应为 -100（cross_entropy 忽略的索引）",
        "the positions not selected get the label {value}, expected -100 (the index cross_entropy ignores)",
    ),
    "part.mlm_rates": (
        "被选中的词元中约 {mask}% 换成 [MASK]、{random}% 换成随机词元、{keep}% 不变，应为 80% / 10% / 10%",
        "among the selected tokens about {mask}% become [MASK], {random}% a random token and {keep}% "
        "stay unchanged, expected 80% / 10% / 10%",
    ),
    "part.abl_one_dict": (
        "返回的配置是同一个字典：每个配置在 factor 处都是最后一个值（每个值都写进了同一个对象）",
        "the configs returned are one dict: every config holds the last value at the factor "
        "(each value was written into the same object)",
    ),
    "part.abl_nested_shared": (
        "配置之间共享放着 factor 的嵌套字典：每个配置在该处都是最后一个值（顶层的值各自正确）",
        "the configs share the nested dict holding the factor: every config holds the last "
        "value there (top-level values are each right)",
    ),
    "part.abl_identity": (
        "两个返回的配置共用{what}：改动其中一个，另一个也跟着变",
        "two configs returned share {what_en}: a change to one shows in the other",
    ),
    "part.abl_base_seed": (
        "每次重复都用了 base 的 seed {seed}，而不是 seeds {seeds} 中对应的那个：seed 没有按重复设置",
        "every repeat runs with base's seed {seed}, not the one of seeds {seeds}: the seed is not set per repeat",
    ),
    "part.abl_seed_per_arm": (
        "各组用的 seed 不同（给定的 seeds 是 {seeds}；每组实际用的：{arms}）：所有组必须共用同一组 seeds",
        "the arms run with different seeds (seeds given: {seeds}; each arm's: {arms}): every "
        "arm must share the same seeds",
    ),
    "part.lm_padding_by_token": (
        "你的损失等于把 id 为 0 的词元当作填充时的参考损失：它没有用 lengths",
        "your loss equals the reference's with the tokens of id 0 taken as the padding: it does not use the lengths",
    ),
    "part.random": (
        "`{fn}` 用同样的输入、同样的权重调用两次，结果不同（随机性，比如训练模式下的 dropout，或在调用之间保留的状态）；"
        "合同要求结果只取决于输入和权重",
        "`{fn}` gives different results when called twice with the same inputs and weights (randomness "
        "such as dropout in training mode, or state kept between calls); the contract's result depends "
        "on the inputs and weights alone",
    ),
    "part.which_outputs": (
        "`{fn}` 返回的 {good} 是对的，只有 {bad} 与参考不同：错在只影响 {bad} 的那部分计算",
        "`{fn}` returns {good} right; only {bad} differ from the reference: the mistake is in the part "
        "of the computation that only {bad} depend on",
    ),
    "part.swapped": (
        "你的结果等于把 {a} 和 {b} 对调后返回的参考结果",
        "your result equals the reference's with {a} and {b} returned in each other's place",
    ),
    "part.swapped_in": (
        "你的结果等于把输入 {a} 和 {b} 对调后的参考结果",
        "your result equals the reference's with the inputs {a} and {b} swapped",
    ),
    "part.near": (
        "`{fn}` 的结果处处接近参考答案，但超出了容差：最大的相对差是 {x}（评分接受 1e-4）。这是精度不够时的差别大小"
        "（float16 每次舍入约 4.9e-4，bfloat16 约 3.9e-3）：是不是有一步用了更低的精度？",
        "`{fn}`'s values are close to the reference's everywhere but outside the tolerance: the largest relative "
        "difference is {x} (the grader accepts 1e-4). That is the size of a lower precision's rounding (float16: "
        "about 4.9e-4 per rounding, bfloat16: 3.9e-3): is a step computed in a lower precision?",
    ),
    "part.when_unsorted": (
        "`{fn}` 在每个 lengths 从长到短排好序的批次上都是对的，在没排序的批次上出错（{n} / {m} 个探针）：它依赖了长度的顺序",
        "`{fn}` is right on every batch whose lengths come sorted from longest to shortest and wrong "
        "on batches whose lengths do not ({n} of {m} probes): it relies on their order",
    ),
    "part.when_long": (
        "`{fn}` 在短序列上是对的；在长序列上前 {t} 步（0 到 {t} - 1）都对，在第 {t} 步第一次出错",
        "`{fn}` is right on short sequences; on long ones the first {t} steps (0 to {t} - 1) are right "
        "and it first goes wrong at step {t}",
    ),
    "part.when_long_positions": (
        "`{fn}` 在前 {t} 个位置（0 到 {t} - 1）上是对的，在位置 {t} 第一次出错：像是只准备了 {t} 个位置的表",
        "`{fn}` is right at the first {t} positions (0 to {t} - 1) and first goes wrong at "
        "position {t}: as if a table held only {t} positions",
    ),
    "part.when_big_batch": (
        "`{fn}` 对一个批次的前 {t} 个序列是对的，在第 {t} 个序列（从 0 数）第一次出错：像是只准备了 {t} 个序列",
        "`{fn}` is right for the first {t} sequences of a batch and first goes wrong at sequence {t} "
        "(counting from 0): as if it were made for {t} sequences only",
    ),
    "part.when_length": (
        "`{fn}` 在 T = {t1} 时是对的，在 T = {t} 以及试过的更长的 T（{T}）时出错或失败（二分查找得到）：像是只准备了 {t1} 个位置的表",
        "`{fn}` is right at T = {t1} and wrong, or failing, at T = {t} and at the longer T tried ({T}) "
        "(found by bisection): as if a table held only {t1} positions",
    ),
    "part.when_second": (
        "`{fn}` 第一次调用的结果都是对的，之后用别的输入再调用时出错（{n} / {m} 个探针）：它在两次调用之间保留了东西（缓存？）",
        "`{fn}` gives the right result on every first call and a wrong one on a later call with other "
        "inputs ({n} of {m} probes): something is kept between calls (a cache?)",
    ),
    "part.when_masked_above": (
        "`{fn}` 在被屏蔽键的分数不比可看键高很多时是对的；当被屏蔽键的分数远高于可看键时出错（{n} / {m} 个探针）："
        "被屏蔽的键仍影响了结果（比如每行的最大值是在包括被屏蔽键在内的所有键上取的，可看键的 exp 就下溢为 0）",
        "`{fn}` is right while the masked keys' scores are not far above the allowed ones and wrong "
        "when they are ({n} of {m} probes): the masked keys still act on the result (a row's maximum "
        "taken over the masked keys too makes every allowed key's exp underflow to 0, for one)",
    ),
    "part.when_far": (
        "`{fn}` 在分数适中时是对的；当一行里所有分数都远小于 0 时出错（探针里最多 {s}，float32 的 exp 在这里下溢为 0）",
        "`{fn}` is right while the scores are moderate and wrong when every score of a row is far below 0 "
        "(at most {s} in the probe, where exp underflows to 0 in float32)",
    ),
    "part.attn_scale": (
        "你的注意力等于把分数除以{by_zh}、而不是除以 sqrt(dk) 的参考结果",
        "your attention equals the reference's with the scores divided by {by_en} instead of sqrt(dk)",
    ),
    "part.attn_temperature": (
        "你的注意力等于把分数再除以 {t}（softmax(QKᵀ / (sqrt(dk)·{t}))）的参考结果：多了一个温度/缩放常数",
        "your attention equals the reference's with the scores further divided by {t} "
        "(softmax(QKᵀ / (sqrt(dk)·{t}))): an extra temperature or scale constant",
    ),
    "part.attn_mask_ignored": (
        "你的注意力等于忽略 mask 时的参考结果：被屏蔽的键也拿到了权重",
        "your attention equals the reference's with the mask ignored: masked keys get weight too",
    ),
    "part.attn_mask_inverted": (
        "你的注意力等于把 mask 取反时的参考结果：True 被当成了“屏蔽”",
        'your attention equals the reference\'s with the mask inverted: True is taken as "blocked"',
    ),
    "part.attn_mask_zero": (
        "你的注意力等于把被屏蔽的分数设为 0（而不是 -inf）时的参考结果：被屏蔽的键仍有 exp(0) 的权重",
        "your attention equals the reference's with the masked scores set to 0 instead of -inf: "
        "masked keys keep a weight of exp(0)",
    ),
    "part.attn_softmax_queries": (
        "你的注意力等于沿查询轴（dim=-2）做 softmax 的参考结果；应沿键轴（dim=-1）",
        "your attention equals the reference's with the softmax over the queries (dim=-2); "
        "it goes over the keys (dim=-1)",
    ),
    "part.mha_attention_function": (
        "你的 MultiHeadAttention 等于参考的投影和分头、中间用你自己的 `{function}`：差别来自 `{function}`，"
        "W_q、W_k、W_v、W_o 和分头都是对的",
        "your MultiHeadAttention equals the reference's projections and heads around your own "
        "`{function}`: the difference comes from `{function}`; W_q, W_k, W_v, W_o and the heads "
        "are right",
    ),
    "part.loss_ignore_kept": (
        "你的损失等于把目标为类别 {k} 的词元排除在外（像 ignore_index={k}）、再对剩下的有效词元取平均的参考损失",
        "your loss equals the reference's with the tokens whose target is class {k} left out "
        "(as ignore_index={k} does), averaged over the remaining valid tokens",
    ),
    "part.loss_ignore_valid": (
        "你的损失等于把目标为类别 {k} 的词元排除在外、但仍除以全部有效词元数的参考损失",
        "your loss equals the reference's with the tokens whose target is class {k} left out, "
        "still divided by the number of valid tokens",
    ),
    "part.loss_clamp": (
        "你的损失等于先把 logits 截断到 [-{c}, {c}] 的参考损失：|logit| 超过 {c} 时结果就不对了",
        "your loss equals the reference's with the logits clamped to [-{c}, {c}] first: it is wrong "
        "once some |logit| exceeds {c}",
    ),
    "part.loss_precision": (
        "你的损失等于用 {dtype} 计算交叉熵的参考损失：精度不够（合同要求的数值在 float32 下算）",
        "your loss equals the reference's with the cross-entropy computed in {dtype}: too little "
        "precision (the contract's values are float32 arithmetic)",
    ),
    "part.loss_rounded": (
        "你的损失等于先把 logits 舍入到 {dtype} 的参考损失：精度不够",
        "your loss equals the reference's with the logits rounded to {dtype} first: too little precision",
    ),
    "part.loss_smoothing": (
        "你的损失等于 label_smoothing={eps} 的交叉熵：(1 - {eps})·CE + {eps}·（对所有类别的 -log p 的平均）；"
        "合同要的是不带平滑的交叉熵",
        "your loss equals cross-entropy with label_smoothing={eps}: (1 - {eps})·CE + {eps}·(the mean "
        "of -log p over all classes); the contract asks for plain cross-entropy",
    ),
    "part.loss": (
        "你的损失等于{tokens_zh}的交叉熵之和除以{denom_zh}",
        "your loss equals the sum of the cross-entropy over {tokens_en}, divided by {denom_en}",
    ),
    # a counterexample
    "cx.title": ("反例（最小的失败输入）", "Counterexample (the smallest failing input)"),
    "cx.call": ("调用", "Call"),
    "cx.click": ("点击展开", "click to show"),
    "cx.expected_shape": ("期望的形状", "expected shape"),
    "cx.your_shape": ("你的形状", "your shape"),
    "cx.wrong_one": ("1 个元素不对（红框标出）", "1 wrong entry (outlined in red)"),
    "cx.wrong_n": ("{n} 个元素不对（红框标出）", "{n} wrong entries (outlined in red)"),
    "cx.partial": ("只显示了一部分", "only a part is shown"),
    "cx.from": ("从 {at} 开始", "from {at}"),
    "cx.wrong_mark": ("✗ = 不对", "✗ = wrong"),
    "cx.wrong_cell": ("不对", "wrong"),
    "cx.picture": ("期望与你的结果对比图", "picture: expected vs yours"),
    "cx.too_large": ("太大，没有显示", "too large to show"),
    "word.expected": ("期望", "expected"),
    "word.got": ("你的结果", "yours"),
    "word.before": ("之前", "before"),
    "word.after": ("之后", "after"),
    "word.difference": ("差值", "difference"),
    "word.wrong": ("（有错）", "(wrong)"),
    "axis.key": ("键 j", "key j"),
    "axis.query": ("查询 i", "query i"),
    "axis.dimension": ("维度", "dimension"),
    "axis.position": ("位置 t", "position t"),
    "axis.weight": ("权重", "weight"),
    "mask.allowed": ("True：可以看", "True: may attend"),
    "mask.blocked": ("False：屏蔽", "False: blocked"),
    # statuses (Status in model.py)
    "status.passed": ("通过", "passed"),
    "status.failed": ("未通过", "failed"),
    "status.missing": ("缺失", "missing"),
    "status.error": ("出错", "error"),
    "status.timeout": ("超时", "time-out"),
    "status.not_graded": ("未评分", "not graded"),
    # what to do when a submission was not graded, by what went wrong
    "why.json": (
        "这个 notebook 文件不完整或损坏了（不是合法的 JSON）：在 Jupyter 里打开它，保存（File → Save），"
        "确认能正常打开后再提交。",
        "The notebook file is cut off or damaged (not valid JSON): open it in Jupyter, save it "
        "(File → Save), check that it opens, and submit it again.",
    ),
    "why.syntax": (
        "文件里有语法错误，Python 一行都运行不了：按上面给出的行号改正后再提交。",
        "The file has a syntax error, so Python cannot run any of it: fix it at the line given above and submit again.",
    ),
    "why.timeout": (
        "运行你的顶层代码（导入、演示单元格）没有在时限内结束：把耗时的演示和训练移到函数里，或者删掉它们。",
        "Running your top-level code (imports, demo cells) did not finish in time: move long "
        "demos and training runs into functions, or remove them.",
    ),
    "why.other": ("", ""),
    # the plain-text, terminal and Gradescope views
    "text.submission": ("提交", "Submission"),
    "text.tests_passed": ("{p}/{n} 个测试通过", "{p}/{n} tests passed", "{p}/{n} 个测试通过 tests passed"),
    "gradescope.not_graded_test": ("未评分", "Not graded"),
    # the nbgrader cells
    "nbgrader.load_problems": ("载入时的问题", "problems while loading your code"),
    "nbgrader.not_graded": ("未评分（这不是 0 分）：{reason}", "not graded (this is not a zero): {reason}"),
    "nbgrader.comment_not_graded": ("seqgrader：未评分 — {reason}", "seqgrader: not graded — {reason}"),
    # the instructors' similarity report (autograder/similarity/): never shown to a student
    "similarity.title": ("相似度报告（仅供教师）", "Similarity report (instructors only)"),
    "similarity.summary": (
        "{n} 名学生，比较了 {c} 对，{f} 对被标记（分数 ≥ {flag}）",
        "{n} students, {c} pairs compared, {f} flagged (score ≥ {flag})",
    ),
    "similarity.pairs": ("相似的两人（按分数排序）", "Similar pairs, highest score first"),
    "similarity.clusters": ("相互关联的一组学生", "Clusters of students"),
    "similarity.no_clusters": ("没有被标记的组。", "No flagged cluster."),
    "similarity.no_pairs": ("没有相似的两人。", "No similar pair."),
    "similarity.pair": ("两人", "Pair"),
    "similarity.score": ("分数", "Score"),
    "similarity.functions": ("函数", "Functions"),
    "similarity.evidence": ("证据", "Evidence"),
    "similarity.excluded": ("不算作证据的共有代码", "Shared code that is never evidence"),
    "similarity.fragment": ("片段 {k}", "fragment {k}"),
    "similarity.unmatched": ("其余的行", "the other lines"),
    "similarity.flagged": ("已标记", "flagged"),
    "similarity.same_structure": (
        "`{fn}`：统一写法后（改名、注释、无用代码、语句顺序、循环与推导式、临时变量、别名、等价的运算与调用），"
        "结构相同的部分占 {pct}%（{n} 个片段，{lines} 行）",
        "`{fn}`: {pct}% of the structure is the same once written one way (names, comments, dead code, the "
        "order of independent statements, loops and comprehensions, temporaries, aliases, equivalent "
        "operators and calls) ({n} fragment(s), {lines} line(s))",
    ),
    "similarity.same_wrong_outputs": (
        "`{fn}`：在诊断的探针输入上给出完全相同的错误输出，而这个错误不在错误目录里",
        "`{fn}`: exactly the same wrong outputs on the diagnosis' probe inputs, from a mistake that is "
        "not in the catalogue",
    ),
}


def pair(key, **fields):
    """(zh, en) of the catalogue entry `key`, `fields` filled in."""
    zh, en = MESSAGES[key][:2]
    return zh.format(**fields), en.format(**fields)


def pick(language, zh, en, sep=" / "):
    """The text in the course's language: zh, en, or both (Chinese first); one of them when the
    other is empty or the two are the same."""
    if language == "zh":
        return zh or en
    if language == "en":
        return en or zh
    if zh and en and zh == en:
        return zh
    return sep.join(s for s in (zh, en) if s)


def say(key, language, sep=" / ", **fields):
    """A catalogue entry in the language.  An entry may hold a third text, its short form for
    `both` where "中文 English" would say a number twice ("−4 分 points", not "扣 4 分 −4 points")."""
    entry = MESSAGES[key]
    if language == "both" and len(entry) > 2:
        return entry[2].format(**fields)
    return pick(language, *pair(key, **fields), sep=sep)


# ---------------------------------------------------------------- text in two languages

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def has_cjk(text):
    """True when `text` holds a CJK ideograph, CJK punctuation or a full-width form."""
    return bool(_CJK.search(str(text)))


# Labels whose forms the general rules below do not cover: (zh, en).
GLOSSARY = {
    "每个词元的交叉熵 per-token cross-entropy (0 = padded)": (
        "每个词元的交叉熵（0 = 填充）",
        "per-token cross-entropy (0 = padded)",
    ),
    "输入的_dtype input dtype": ("输入的 dtype", "input dtype"),
    "改变后的 X X with a new future": ("改变未来后的 X", "X with a new future"),
    "改变后的 X X with new padding": ("改变填充后的 X", "X with new padding"),
    "改变填充后 x with other padding": ("改变填充后的 x", "x with other padding"),
    "实际 got (每行长度 lengths)": ("实际（每行长度）", "got (lengths of the rows)"),
    "被选中后变成 mask_id 的比例": ("被选中后变成 mask_id 的比例", "share of the selected that became mask_id"),
}

# The Chinese word and its English one at the head of a label, followed by the name of the value:
# "期望 expected mask" -> "期望 mask" / "expected mask".
HEADS = [
    ("期望", "expected"),
    ("实际", "got"),
    ("改变后的", "after"),
    ("改变后", "changed"),
    ("原来的", "before"),
    ("之前", "before"),
    ("之后", "after"),
    ("调用前", "before"),
    ("调用后", "after"),
]

_HEAD = re.compile(r"^(?P<zh>[^\sA-Za-z]+) (?P<en>[A-Za-z][^\u3000-\u9fff\uff00-\uffef]*)$")
_PAREN = re.compile(r"^(?P<name>[^（(]*?)\s?[（(](?P<zh>[^\sA-Za-z）)]+) (?P<en>[^（）()\u3000-\u9fff]+)[）)]$")


def label_pair(text):
    """(zh, en) of a label a property gave a value; (text, text) for a label in no language
    (an argument's name: "lengths", "Q").  Forms understood:

        中文 english words          "调用 call", "手算 by hand", "门的设置 gate setting"
        中文 english name           "期望 expected mask" (a head word of HEADS, then the value's name)
        name（中文 english）          "logits（原始 original）", "b_ih (饱和后 saturated)"
        anything in GLOSSARY"""
    text = str(text)
    if text in GLOSSARY:
        return GLOSSARY[text]
    if not has_cjk(text):
        return text, text
    for zh, en in HEADS:
        if text.startswith(f"{zh} {en} "):
            rest = text[len(zh) + len(en) + 2 :]
            return f"{zh} {rest}".strip(), f"{en} {rest}".strip()
    m = _PAREN.match(text)
    if m:
        name = m.group("name").strip()
        return f"{name}（{m.group('zh')}）", f"{name} ({m.group('en').strip()})"
    m = _HEAD.match(text)
    if m:
        return m.group("zh"), m.group("en")
    return text, text


def label(text, language, sep=" "):
    """A label in the language; in `both` as the property wrote it ("期望 expected mask"), which
    already says each word once in each language (a GLOSSARY label in its two clean halves)."""
    if language == "both" and str(text) not in GLOSSARY:
        return str(text)
    return pick(language, *label_pair(text), sep=sep)


_DIFFERS = re.compile(r"^(?P<where>.+): expected (?P<e>.+), got (?P<g>.+)$")


def value_pair(text):
    """(zh, en) of a free-text value a property wrote in both languages, else None: "中文 / English"
    on one line, or Chinese lines followed by English lines; and the harness's list of differing
    entries ("mask[0, 1]: expected True, got False"), which is written in English only."""
    text = str(text)
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if lines and all(_DIFFERS.match(ln) for ln in lines):
        zh = "\n".join("{where}：期望 {e}，实际 {g}".format(**_DIFFERS.match(ln).groupdict()) for ln in lines)
        return zh, text
    if not has_cjk(text) or text.startswith("tensor"):
        return None
    parts = text.split(" / ")
    if len(parts) == 2 and has_cjk(parts[0]) and not has_cjk(parts[1]) and _LATIN_WORD.search(parts[1]):
        return parts[0].strip(), parts[1].strip()
    lines = text.split("\n")
    zh = [ln for ln in lines if has_cjk(ln)]
    en = [ln for ln in lines if not has_cjk(ln) and _LATIN_WORD.search(ln)]
    if zh and en and len(zh) + len(en) == len([ln for ln in lines if ln.strip()]):
        return "\n".join(zh), "\n".join(en)
    return None


def value(text, language, sep="\n"):
    """A value in one language when a property wrote it in two; as it is otherwise."""
    p = value_pair(text)
    if p is None or language == "both":  # in both: as the property wrote it, each language once
        return str(text)
    return pick(language, *p, sep=sep)
