// Unit tests of the C++ runtime and the C ABI (GoogleTest, run by ctest in `make test`): kernels
// against float64 math on fresh random inputs with poisoned outputs, the helpers against their
// definitions, and refused calls naming the argument with nothing written.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "posattn/posattn.h"
#include "posattn/posattn.hpp"

namespace {

using posattn::DType;
using posattn::Tensor;

std::vector<float> random_floats(size_t n, std::mt19937 &rng) {
    std::normal_distribution<float> normal;
    std::vector<float> values(n);
    for (float &x : values) x = normal(rng);
    return values;
}

Tensor view(std::vector<float> &a, std::vector<int64_t> shape) { return {a.data(), DType::float32, std::move(shape)}; }

// softmax(q·kᵀ/√D)·v in float64: GQA by head groups, causal bottom-right (contract §0).
std::vector<double> attention_reference(const std::vector<float> &q, const std::vector<float> &k, const std::vector<float> &v,
                                        int64_t Hq, int64_t Hkv, int64_t Lq, int64_t Lk, int64_t D, bool causal) {
    std::vector<double> out(Hq * Lq * D, 0.0);
    for (int64_t h = 0; h < Hq; h++)
        for (int64_t i = 0; i < Lq; i++) {
            const int64_t kv = h / (Hq / Hkv), visible = causal ? i + Lk - Lq + 1 : Lk;
            std::vector<double> s(visible);
            double top = -INFINITY, sum = 0;
            for (int64_t j = 0; j < visible; j++) {
                for (int64_t d = 0; d < D; d++) s[j] += double(q[(h * Lq + i) * D + d]) * k[(kv * Lk + j) * D + d];
                top = std::max(top, s[j] /= std::sqrt(double(D)));
            }
            for (double &x : s) sum += x = std::exp(x - top);
            for (int64_t j = 0; j < visible; j++)
                for (int64_t d = 0; d < D; d++) out[(h * Lq + i) * D + d] += s[j] / sum * v[(kv * Lk + j) * D + d];
        }
    return out;
}

class Attention : public ::testing::TestWithParam<bool> {};

TEST_P(Attention, MatchesFloat64ThroughCppAndC) {
    const bool causal = GetParam();
    const int64_t Hq = 4, Hkv = 2, Lq = 5, Lk = 19, D = 16;
    std::mt19937 rng(std::random_device{}());
    auto q = random_floats(Hq * Lq * D, rng), k = random_floats(Hkv * Lk * D, rng), v = random_floats(Hkv * Lk * D, rng);
    std::vector<float> out(Hq * Lq * D, NAN), c_out(out.size(), NAN);
    posattn::AttentionOptions options;
    options.causal = causal;
    posattn::attention(view(q, {1, Hq, Lq, D}), view(k, {1, Hkv, Lk, D}), view(v, {1, Hkv, Lk, D}),
                       view(out, {1, Hq, Lq, D}), options);
    const auto expected = attention_reference(q, k, v, Hq, Hkv, Lq, Lk, D, causal);
    for (size_t e = 0; e < out.size(); e++) ASSERT_NEAR(out[e], expected[e], 2e-6) << "element " << e;

    const int64_t qs[4] = {1, Hq, Lq, D}, ks[4] = {1, Hkv, Lk, D};
    posattn_tensor tq = {q.data(), POSATTN_FLOAT32, 4, qs, nullptr, POSATTN_HOST};
    posattn_tensor tk = {k.data(), POSATTN_FLOAT32, 4, ks, nullptr, POSATTN_HOST};
    posattn_tensor tv = {v.data(), POSATTN_FLOAT32, 4, ks, nullptr, POSATTN_HOST};
    posattn_tensor to = {c_out.data(), POSATTN_FLOAT32, 4, qs, nullptr, POSATTN_HOST};
    posattn_attention_options c_options;
    posattn_attention_options_init(&c_options);
    c_options.causal = causal;
    ASSERT_EQ(posattn_attention(&tq, &tk, &tv, &to, &c_options), POSATTN_OK) << posattn_last_error();
    EXPECT_EQ(c_out, out);  // the same kernel, bit for bit
}
INSTANTIATE_TEST_SUITE_P(Causal, Attention, ::testing::Bool());

TEST(Sinusoidal, MatchesItsDefinition) {
    const int64_t S = 37, d = 24;
    std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int32_t> position(0, 100000);
    std::vector<int32_t> positions(S);
    for (int32_t &p : positions) p = position(rng);
    std::vector<float> out(S * d, NAN);
    posattn::sinusoidal({positions.data(), DType::int32, {S}}, view(out, {S, d}));
    for (int64_t s = 0; s < S; s++)
        for (int64_t i = 0; i < d / 2; i++) {  // interleaved: (sin, cos) of p·10000^(−2i/d)
            const double angle = positions[s] * std::pow(10000.0, -2.0 * i / d);
            ASSERT_NEAR(out[s * d + 2 * i], std::sin(angle), 1e-6) << "position " << positions[s];
            ASSERT_NEAR(out[s * d + 2 * i + 1], std::cos(angle), 1e-6) << "position " << positions[s];
        }
}

TEST(Helpers, AlibiSlopesAndT5Buckets) {
    const std::vector<double> eight = posattn::alibi_slopes(8), twelve = posattn::alibi_slopes(12);
    for (int h = 0; h < 8; h++) EXPECT_EQ(eight[h], std::ldexp(1.0, -(h + 1)));
    for (int h = 0; h < 4; h++) EXPECT_DOUBLE_EQ(twelve[8 + h], std::pow(2.0, -(2 * h + 1) / 2.0));  // from 16's odd ones
    EXPECT_EQ(posattn::t5_bucket(0), 0);
    EXPECT_EQ(posattn::t5_bucket(1), 17);   // key after the query: the upper half
    EXPECT_EQ(posattn::t5_bucket(-1), 1);
    EXPECT_EQ(posattn::t5_bucket(-100000), 15);
    EXPECT_EQ(posattn::t5_bucket(5, /*bidirectional=*/false), 0);  // causal T5: future keys share bucket 0
}

TEST(Errors, NameTheArgumentAndWriteNothing) {
    std::vector<float> table(10 * 8, 1.0f), out(3 * 8, NAN);
    std::vector<int32_t> positions = {0, 9, 10};  // 10 is past the table's 10 rows
    try {
        posattn::learned(view(table, {10, 8}), {positions.data(), DType::int32, {3}}, view(out, {3, 8}));
        FAIL() << "an out-of-range position was accepted";
    } catch (const posattn::Error &e) {
        EXPECT_EQ(e.kind(), posattn::Error::Kind::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("positions"), std::string::npos) << e.what();
    }
    for (float x : out) EXPECT_TRUE(std::isnan(x));  // untouched

    const int64_t table_shape[2] = {10, 8}, positions_shape[1] = {3}, out_shape[2] = {3, 9};  // d 9 ≠ 8
    posattn_tensor t = {table.data(), POSATTN_FLOAT32, 2, table_shape, nullptr, POSATTN_HOST};
    posattn_tensor p = {positions.data(), POSATTN_INT32, 1, positions_shape, nullptr, POSATTN_HOST};
    posattn_tensor o = {out.data(), POSATTN_FLOAT32, 2, out_shape, nullptr, POSATTN_HOST};
    EXPECT_EQ(posattn_learned(&t, &p, &o, 0), POSATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(posattn_last_error()).find("out"), std::string::npos) << posattn_last_error();
    EXPECT_EQ(posattn_learned(&t, nullptr, &o, 0), POSATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(posattn_last_error()).find("positions"), std::string::npos) << posattn_last_error();
    for (float x : out) EXPECT_TRUE(std::isnan(x));
}

TEST(Registry, ListsTheBuildsKernelsAndRefusesUnknownSchedules) {
    bool plain = false;
    for (const posattn::KernelInfo &k : posattn::kernels())
        plain = plain || (k.function == "posattn_attn_plain_f32" && k.schedule == "hand");
    EXPECT_TRUE(plain);
    std::vector<float> out(4 * 6, NAN);
    std::vector<int32_t> positions = {1, 2, 3, 4};
    try {
        posattn::integer({positions.data(), DType::int32, {4}}, view(out, {4, 6}), {"no_such_schedule", "cpu"});
        FAIL() << "an unknown schedule was accepted";
    } catch (const posattn::Error &e) {
        EXPECT_EQ(e.kind(), posattn::Error::Kind::unsupported);
        EXPECT_NE(std::string(e.what()).find("no_such_schedule"), std::string::npos) << e.what();
    }
    for (float x : out) EXPECT_TRUE(std::isnan(x));
}

// add_kernel takes kernels of this build's functions or of one's own outside posattn_, with both
// entry points (a kernel of one's own is run by tests/test_package.py's custom variant example).
TEST(Registry, AddKernelRefusesNamesInPosattnsSpaceAndNullEntryPoints) {
    auto refused = [](const std::string &function, posattn::KernelArgv argv, const char *named) {
        try {
            posattn::add_kernel(function, argv, nullptr);
            ADD_FAILURE() << function << " was added";
        } catch (const posattn::Error &e) {
            EXPECT_EQ(e.kind(), posattn::Error::Kind::invalid_argument);
            EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
        }
    };
    auto argv = +[](void **) { return 0; };
    refused("posattn_nonesuch_f32", argv, "argument 'function'");
    refused("", argv, "argument 'function'");
    refused("my_attention", nullptr, "argument 'argv'");
    refused("my_attention", argv, "argument 'metadata'");
    for (const posattn::KernelInfo &k : posattn::kernels()) EXPECT_NE(k.function, "my_attention");
}

// posattn::jit with the AOT kernel's params compiles that kernel (the same bits); a bad param is
// refused naming the argument. (Its cache goes to a fresh folder: the first call compiles.)
TEST(Jit, DefaultParamsCompileTheAotKernelAndBadParamsAreRefused) {
    char cache[] = "/tmp/posattn_jit_test.XXXXXX";
    ASSERT_NE(mkdtemp(cache), nullptr);
    setenv("POSATTN_JIT_CACHE", cache, 1);
    struct Cleanup {
        const char *folder;
        ~Cleanup() {
            std::filesystem::remove_all(folder);
            unsetenv("POSATTN_JIT_CACHE");
        }
    } cleanup{cache};
    std::mt19937 rng(std::random_device{}());
    auto x = random_floats(2 * 3 * 11 * 24, rng);
    std::vector<float> aot(x.size(), NAN), jitted(x.size(), NAN);
    const std::string schedule = posattn::jit("posattn_rope_f32");
    posattn::rope(view(x, {2, 3, 11, 24}), view(aot, {2, 3, 11, 24}));
    posattn::rope(view(x, {2, 3, 11, 24}), view(jitted, {2, 3, 11, 24}), {}, {schedule, "cpu"});
    EXPECT_EQ(jitted, aot);
    EXPECT_EQ(posattn::jit("posattn_rope_f32"), schedule);
    try {
        posattn::jit("posattn_rope_f32", {{{"no_such_param", "1"}}});
        FAIL() << "an unknown generator param was accepted";
    } catch (const posattn::Error &e) {
        EXPECT_NE(std::string(e.what()).find("argument 'params'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("no_such_param"), std::string::npos) << e.what();
    }
}

}  // namespace
