// x86 defaults (AVX-512: 16 float32 lanes, 32 vector registers) of the CPU elementwise encoding schedule
// (schedules/cpu/encodings.h).
// Measured 2026-11-30 (AMD EPYC, AVX-512, 2 threads, [8, 8192, 1024] float32, bench/bench.py):
// sinusoid table interleaved 26 GB/s (73-78% of the copy stream, 93% of the fill), half 18-20 GB/s
// (~100% of a fill with its two-run store pattern), x + sinusoid 33 GB/s (~99% of copy), learned
// gathers 31 GB/s (~98% of copy). rows_per_task 64 over 16: +8% on the tables.
// Intel Xeon (2026-12-01), non-temporal twins, of the non-temporal copy: sinusoid 71-78% (half
// 77%) and sin-only 62-68% from split-position tables, integer 120%, learned 118%.
// Intel Xeon (2026-12-02), rows given with their positions' parts (generators/trig.h OrderedRows),
// bench.py's pairs with the copy, 61 each: sinusoid 89% (half 94%, x + PE 89%), sin-only 88%
// (x + PE 80%), integer 118%.
// Intel Xeon (2026-12-04), the trig x + PE forms in tiles of 16 rows × 4 vectors (schedules/cpu/
// encodings.h parallel_rows), bench.py --repeats 9: sinusoid x + PE 96-97% of the copy (82% in whole
// rows, tuned), sin-only x + PE 88-94% (79%); re-tuned then, nothing past the defaults (3%).
#pragma once

#include "schedules/cpu/encodings.h"

namespace posattn::x86 {

inline cpu::EncodingParams encoding_defaults() {
    cpu::EncodingParams p;
    p.vector_width = 16;
    p.rows_per_task = 64;
    return p;
}

// The trig x + PE forms (kernels.json row_tiles): on AVX-512, tiles of 16 rows × 64 channels
// (Intel Xeon, above). On AVX2, whole rows: AMD EPYC Zen 3, 2026-12-07, [8, 8192, 1024] random
// positions, non-temporal stores: sinusoid x + PE 19.4-20.3 ms in whole rows where 16 × 4 tiles
// took 48 and the tuned 4 × 32-channel tiles 44-46 (float16: 13.0, tiles 47.9); sin-only equal.
inline cpu::TiledEncodingParams tiled_encoding_defaults(bool avx512) {
    cpu::TiledEncodingParams p;
    static_cast<cpu::EncodingParams &>(p) = encoding_defaults();
    p.tile_rows = avx512 ? 16 : 0;
    p.tile_vectors = 4;
    return p;
}

}  // namespace posattn::x86
