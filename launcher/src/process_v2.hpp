// SPDX-License-Identifier: MIT
#pragma once
// Boost.Process v2 as this project uses it. Boost 1.81 with BOOST_PROCESS_USE_STD_FS needs
// these two headers first ('optional' has not been declared in 'boost'); fixed in 1.83.
#include <boost/optional.hpp>
#include <boost/type_traits.hpp>
// (keep the order above)
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/posix/default_launcher.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>
