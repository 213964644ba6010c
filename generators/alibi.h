// ALiBi's offsets (contract §7), shared by the bias kernel and attention's bias term. For a query at
// absolute position `query` and key `key`, the bias is slope · offset with
//   form 0 'relative' j − i,  1 'key_position' j,  2 'symmetric' −|i − j|.
#pragma once

#include "Halide.h"

namespace posattn {

inline Halide::Expr alibi_offset(Halide::Expr form, Halide::Expr query, Halide::Expr key) {
    using namespace Halide;
    Expr key_minus_query = key - query;
    return select(form == 0, key_minus_query, form == 1, key, min(key_minus_query, -key_minus_query));  // −|j − i|
}

}  // namespace posattn
