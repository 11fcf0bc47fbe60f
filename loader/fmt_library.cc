// fmt's implementation, compiled once for everything that formats text
// (loader, core, their tests): what fmt's own src/format.cc holds, for the
// fmt releases the supported Debian releases ship (9.1 in Debian 12, 10.1 in
// Debian 13, 11.1 and 12.x in unstable). The top-level meson.build falls
// back to header-only fmt for any other release.
//
// Why not header-only everywhere: then every file that calls fmt::format
// compiles fmt's formatting machinery again, 2-7 s a file, in each of the
// project's builds. Why not the shared libfmt: no libfmt travels with the
// wheel. The symbols stay hidden (-fvisibility=hidden), so the module and the
// plugins export no fmt.
#include <fmt/format-inl.h>

// Whether this fmt formats with std::locale, as its format.cc asks.
#if FMT_VERSION >= 110000
#define TF_FMT_LOCALE FMT_USE_LOCALE
#elif defined(FMT_STATIC_THOUSANDS_SEPARATOR)
#define TF_FMT_LOCALE 0
#else
#define TF_FMT_LOCALE 1
#endif
// fmt 12 moved locale_ref out of fmt::detail.
#define TF_FMT_LOCALE_REF                                          \
  template FMT_API locale_ref::locale_ref(const std::locale& loc); \
  template FMT_API auto locale_ref::get<std::locale>() const->std::locale;

FMT_BEGIN_NAMESPACE

#if FMT_VERSION >= 120000 && TF_FMT_LOCALE
TF_FMT_LOCALE_REF
#endif

namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept
    -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept
    -> dragonbox::decimal_fp<double>;

#if FMT_VERSION < 120000 && TF_FMT_LOCALE
TF_FMT_LOCALE_REF
#endif

template FMT_API auto thousands_sep_impl(locale_ref)
    -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);

#if FMT_VERSION < 100000
template FMT_API void vformat_to(buffer<char>&, string_view,
                                 basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                                 locale_ref);
#elif FMT_VERSION < 120000
template FMT_API void vformat_to(buffer<char>&, string_view,
                                 typename vformat_args<>::type, locale_ref);
#endif

template FMT_API auto thousands_sep_impl(locale_ref)
    -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);

}  // namespace detail
FMT_END_NAMESPACE
