// SPDX-License-Identifier: MIT
// The compiled part of Boost.Process v2: header-only mode does not link in 1.81
// (boostorg/process#312), so one TU builds it with BOOST_PROCESS_V2_SEPARATE_COMPILATION.
#include <boost/optional.hpp>
#include <boost/type_traits.hpp>
// (keep the order above)
#include <boost/process/v2/src.hpp>
