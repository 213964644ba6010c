// The attention generator as a base class: the inputs, estimates and schedule every attention
// kernel shares. A variant derives from it, adds its own inputs, and says what it adds to the
// algorithm (generators/attention.h) in declaration():
//
//   class Kerple : public posattn::AttentionGenerator<Kerple> {
//   public:
//       Input<Buffer<float, 1>> r1{"r1"};  // [Hq]
//       posattn::AttentionDeclaration declaration() {
//           r1.set_estimates({{0, 8}});
//           posattn::AttentionDeclaration decl;
//           decl.logit_biases.push_back([this](const posattn::ScoreSite &s) { return ...; });
//           return decl;
//       }
//   };
//   HALIDE_REGISTER_GENERATOR(Kerple, kerple_attention)
//
// posattn's runtime calls such a kernel with its masks, binding the variant's inputs by name
// (AttentionOptions::custom); posattn's own variants are one such class (attention_generator.cpp).
// A variant whose run-time mode input picks between forms (ALiBi's, RoPE's layout) lists the
// conditions in vulkan_modes(), so that Vulkan kernels get a loop nest per form.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "Halide.h"
#include "attention.h"
#include "schedules/attention.h"
#include "schedules/gpu/vulkan_modes.h"
#include "storage.h"

namespace posattn {

template <typename Variant>
class AttentionGenerator : public Halide::Generator<Variant> {
    template <typename T>
    using In = Halide::GeneratorInput<T>;
    template <typename T>
    using Buf = Halide::Buffer<T, 4>;

public:
    Halide::GeneratorParam<std::string> schedule_params{"schedule_params", ""};  // schedules/params.h
    // "", "decode1", "decode", "decode8" or "window": schedules/attention.h
    Halide::GeneratorParam<std::string> shape_class{"shape_class", ""};
    // The storage of q, k and v (generators/storage.h), and of out unless out_dtype names another.
    Halide::GeneratorParam<Halide::Type> dtype{"dtype", Halide::Float(32)};
    Halide::GeneratorParam<std::string> out_dtype{"out_dtype", ""};

    // q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] with any strides of the outer
    // dimensions; Hq a multiple of Hkv (GQA/MQA).
    In<Buf<void>> q{"q"}, k{"k"}, v{"v"};
    // [B, Lq]: query row i of batch b sees keys [key_first, key_end) at most, and KeyMasks' from,
    // until (generators/attention.h); the runtime makes them from key lengths and starts,
    // segments and query lengths.
    In<Halide::Buffer<int32_t, 2>> key_first{"key_first"}, key_end{"key_end"}, keys_from{"keys_from"}, keys_until{"keys_until"};
    // [B, Hq, Lq, Lk], any strides (0 where broadcast): read only where masked != 0.
    In<Buf<uint8_t>> mask{"mask"};
    In<Buf<float>> bias{"bias"};
    In<int32_t> masked{"masked"};
    In<float> scale{"scale"};
    // A query at position p sees keys j with j ≤ p + lookahead (0: causal) and p − j < window. Ints
    // rather than a bool flag: Halide 21's SPIR-V cannot pass a hoisted bool to a kernel.
    In<int32_t> lookahead{"lookahead"}, window{"window"};
    Halide::GeneratorOutput<Buf<void>> out{"out"};  // [B, Hq, Lq, Dv]

    // A variant's own configure() calls this first.
    void configure() {
        const Halide::Type stored = storage_type(dtype);
        for (auto *input : {&q, &k, &v}) input->set_type(stored);
        out_type_ = out_dtype.value().empty() ? stored : storage_type(out_dtype.value());
        out.set_type(out_type_);
    }

    // Defaults for a variant that adds nothing (plain attention) and has no mode.
    AttentionDeclaration declaration() { return {}; }
    std::vector<Halide::Expr> vulkan_modes() { return {}; }

    void generate() {
        using namespace Halide;
        Expr D = q.dim(0).extent(), Dv = v.dim(0).extent(), Lq = q.dim(1).extent(), Lk = k.dim(1).extent();
        Expr group = q.dim(2).extent() / k.dim(2).extent();
        const AttentionTiles tiles = attention_tiles(this->get_target(), schedule_params, shape_class);
        stages_ = define_attention(with_wide_keys(self().declaration(), tiles), tiles, q, k, v, D, Dv, Lq, Lk, group, KeyMasks{key_first, key_end, keys_from, keys_until, mask, bias, masked},
                                   scale, lookahead, window);
        out(stages_.d, stages_.i, stages_.h, stages_.b) = Halide::cast(out_type_, stages_.out(stages_.d, stages_.i, stages_.h, stages_.b));
        // The runtime passes every buffer with zero mins; tiles then start on tile boundaries.
        for (int dim = 0; dim < 4; dim++) out.dim(dim).set_min(0);
        set_estimates();
    }

    void schedule() {
        if (this->using_autoscheduler()) return;
        schedule_attention(this->get_target(), schedule_params, shape_class, stages_, out);
        Halide::Stage with_mask = out.specialize(masked != 0);  // a call without a mask or bias reads neither (KeyMasks)
        std::vector<Halide::Stage> nests{with_mask, out};
        for (Halide::Func x : {stages_.q_transformed, stages_.k_transformed})  // their own loop nests on GPUs
            if (x.defined()) nests.push_back(x);
        gpu::specialize_modes_for_vulkan(this->get_target(), nests, self().vulkan_modes());
    }

protected:
    // A variant's inputs follow `out`: the runtime binds arguments by name, whatever their order.
    bool allow_out_of_order_inputs_and_outputs() const override { return true; }

private:
    Variant &self() { return *static_cast<Variant *>(this); }

    // The calls of the shape class, for the autoschedulers: a 2048-token prompt (window: with a
    // 256-key sliding window), or (decode) one query of a 4-head GQA group against 4096 cached
    // keys, as the runtime folds it (decode1: one query per KV head; decode8: a group of 8).
    void set_estimates() {
        const std::string cls = shape_class;
        const int rows = cls == "decode1" ? 1 : cls == "decode" ? 4 : cls == "decode8" ? 8 : 2048,
                  keys = decodes() ? 4096 : 2048;
        q.set_estimates({{0, 64}, {0, rows}, {0, 8}, {0, 1}});
        k.set_estimates({{0, 64}, {0, keys}, {0, 8}, {0, 1}});
        v.set_estimates({{0, 64}, {0, keys}, {0, 8}, {0, 1}});
        for (auto *range : {&key_first, &key_end, &keys_from, &keys_until}) range->set_estimates({{0, rows}, {0, 1}});
        mask.set_estimates({{0, keys}, {0, rows}, {0, 8}, {0, 1}});
        bias.set_estimates({{0, keys}, {0, rows}, {0, 8}, {0, 1}});
        masked.set_estimate(0);
        scale.set_estimate(0.125f);
        lookahead.set_estimate(std::numeric_limits<int32_t>::max());
        window.set_estimate(cls == "window" ? 256 : std::numeric_limits<int32_t>::max());
        out.set_estimates({{0, 64}, {0, rows}, {0, 8}, {0, 1}});
    }

    // 16-bit keys widened once per call on CPUs (as a transformed k, computed root): the prefill
    // q·k tile broadcasts k element by element, which in 16 bits paid a conversion per element
    // (float16 prefill ran at 0.57x the float32 kernel). Not where the kernel streams keys once
    // (decoding), nor on GPUs, which convert on load for free, nor where q·k reads bfloat16 pairs.
    AttentionDeclaration with_wide_keys(AttentionDeclaration decl, const AttentionTiles &tiles) {
        if (dtype.value() != Halide::Float(32) && !decodes() && !decl.transform_k && !this->get_target().has_gpu_feature() &&
            !bfloat16_pairs(decl, tiles, dtype))
            decl.transform_k = [](Halide::Func wide) { return wide; };
        return decl;
    }

    bool decodes() const { return decode_class(shape_class); }

    AttentionStages stages_;
    Halide::Type out_type_;
};

}  // namespace posattn
