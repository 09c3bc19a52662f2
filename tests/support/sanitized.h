// Whether this test program was built with AddressSanitizer or ThreadSanitizer
// (scripts/sanitize.sh): a few tests check less there, saying what and why where they do.
#pragma once

namespace hoop::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace hoop::test
