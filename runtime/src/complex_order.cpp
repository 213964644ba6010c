// Complex-order embeddings (contract §4): frequency initialisations and the (real, imag) kernel.
#include <cmath>
#include <vector>

#include "internal.h"

namespace posattn {

using detail::Checker;
using detail::HalideView;
using detail::KernelCall;

void complex_order_frequency_init(const Tensor &out, ComplexOrderInit kind) {
    Checker check("complex_order_frequency_init");
    check.tensor(out, "out", DType::float32, {2});
    check.output(out, "out");
    int64_t V = out.shape[0], d = out.shape[1];
    float *data = static_cast<float *>(out.data);
    for (int64_t w = 0; w < V; w++)
        for (int64_t c = 0; c < d; c++) {
            // translation (Models.py): the frozen sinusoid table's 10000^(−2⌊c/2⌋/d), the same for every
            // word; classification (Complex_order.py): w·10000^(−2c/d).
            double omega = kind == ComplexOrderInit::translation ? std::pow(10000.0, -double(2 * (c / 2)) / double(d))
                                                                 : double(w) * std::pow(10000.0, -double(2 * c) / double(d));
            data[w * out.stride(0) + c * out.stride(1)] = float(omega);
        }
}

namespace {

// The tokens as the kernel computes them (generators/trig.h OrderedRows): (s, b, word, position)
// each, of [B, S] read as positions_2d (1-D tokens as one batch). On CPUs, where the tables
// outgrow half a core's L2, sorted by word (stably): each token's table rows are then read in
// address order, once where its word repeats, instead of at random (AMD EPYC, the benchmark's
// [8, 8192, 1024] with V = 30000, alternated 9 times: 39.1 against 46.4 ms a call, with phase
// 52.1 against 64.9); where they fit, the tokens keep their order, which writes the outputs in
// order (V = 64: sorted 36 against 32 ms). The counting sort's buckets are bounded
// by the tokens (V <= kWordsPerToken per token); where words are sparser, the tokens keep their
// order too. The words are checked to be in [0, V) before.
class TokenRows {
public:
    struct Row {
        int32_t s, b, word, position;
    };
    static_assert(sizeof(Row) == 4 * sizeof(int32_t), "rows are [rows, 4] int32");

    TokenRows(const Tensor &token_ids, const Tensor &positions, int64_t V, int64_t table_bytes, bool cpu) {
        Tensor ids = detail::positions_2d(token_ids, 1), pos = detail::positions_2d(positions, 1);
        const int32_t *id = static_cast<const int32_t *>(ids.data), *p = static_cast<const int32_t *>(pos.data);
        const bool sort = cpu && table_bytes > detail::half_l2_bytes() && V <= kWordsPerToken * ids.numel();
        std::vector<int64_t> first(sort ? size_t(V) + 1 : 0, 0);
        rows.reserve(size_t(ids.numel()));
        for (int64_t b = 0; b < ids.shape[0]; b++)
            for (int64_t s = 0; s < ids.shape[1]; s++) {
                const Row &row = rows.emplace_back(Row{int32_t(s), int32_t(b), id[b * ids.stride(0) + s * ids.stride(1)],
                                                       p[b * pos.stride(0) + s * pos.stride(1)]});
                if (sort) first[size_t(row.word) + 1]++;
            }
        if (!sort) return;
        for (size_t w = 1; w < first.size(); w++) first[w] += first[w - 1];
        std::vector<Row> by_word(rows.size());
        for (const Row &row : rows) by_word[size_t(first[size_t(row.word)]++)] = row;
        rows.swap(by_word);
    }

    std::vector<Row> rows;

private:
    static constexpr int64_t kWordsPerToken = 8;
};

}  // namespace

void complex_order(const Tensor &token_ids, const Tensor &positions, const Tensor &amplitude, const Tensor &frequency,
                   const std::optional<Tensor> &phase, const Tensor &real, const Tensor &imag, const CallOptions &call) {
    Checker check("complex_order");
    check.tensor(token_ids, "token_ids", DType::int32, {1, 2});
    check.tensor(positions, "positions", DType::int32, {token_ids.shape.size()});
    check.leading_dims(positions, "positions", token_ids, "token_ids");
    check.host_or_device(amplitude, "amplitude", DType::float32, {2}, call);
    int64_t V = amplitude.shape[0], d = amplitude.shape[1];
    std::vector<std::pair<const Tensor *, const char *>> tables{{&frequency, "frequency"}};
    if (phase) tables.emplace_back(&*phase, "phase");
    for (auto [table, name] : tables) {
        check.host_or_device(*table, name, DType::float32, {2}, call);
        check.leading_dims(*table, name, amplitude, "amplitude");
    }
    for (auto [out, name] : {std::pair{&real, "real"}, {&imag, "imag"}}) {
        check.host_or_device(*out, name, DType::float32, {token_ids.shape.size() + 1}, call);
        check.leading_dims(*out, name, token_ids, "token_ids");
        check.dim(*out, name, token_ids.shape.size(), d, "d, amplitude's dimension 1");
        check.output(*out, name);
    }
    check.disjoint(imag, "imag", real, "real");
    for (const Tensor *out : {&real, &imag})
        for (auto [table, name] : tables) check.disjoint(*out, out == &real ? "real" : "imag", *table, name);
    for (const Tensor *out : {&real, &imag})
        for (auto [input, name] : {std::pair{&amplitude, "amplitude"}, {&token_ids, "token_ids"}, {&positions, "positions"}})
            check.disjoint(*out, out == &real ? "real" : "imag", *input, name);
    check.row_count(token_ids.numel(), "token_ids");
    const int32_t *ids = static_cast<const int32_t *>(token_ids.data);
    detail::for_each_offset<1>(token_ids.shape, {&token_ids}, [&](const std::array<int64_t, 1> &o) {
        if (ids[o[0]] < 0 || ids[o[0]] >= V)
            check.fail("argument 'token_ids' holds " + std::to_string(ids[o[0]]) + "; expected 0 <= token id < V = " +
                       std::to_string(V) + " (amplitude's dimension 0)");
    });
    const char *function = phase ? "posattn_complex_order_phase_f32" : "posattn_complex_order_f32";
    if (detail::nothing_to_compute(real, function, call)) return;

    TokenRows rows(token_ids, positions, V, V * d * int64_t(sizeof(float)) * int64_t(1 + tables.size()), call.device == "cpu");
    HalideView rows_view(Tensor{rows.rows.data(), DType::int32, {int64_t(rows.rows.size()), 4}, {}}, false);
    HalideView amp_view(amplitude, false), freq_view(frequency, false);
    HalideView real_view(detail::with_leading_batch(real), true), imag_view(detail::with_leading_batch(imag), true);
    KernelCall kernel(function, call);
    kernel.arg("rows", rows_view).arg("amplitude", amp_view).arg("frequency", freq_view)
        .arg("out.0", real_view).arg("out.1", imag_view);
    std::optional<HalideView> phase_view;
    if (phase) kernel.arg("phase", phase_view.emplace(*phase, false));
    kernel.run();
    real_view.finish();
    imag_view.finish();
}

}  // namespace posattn
