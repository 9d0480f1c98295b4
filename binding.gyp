{
  # palisade_asan=1 (set by `node scripts/build-native.mjs --asan`) builds a Debug addon
  # with AddressSanitizer and UndefinedBehaviorSanitizer; run node with libasan preloaded.
  # palisade_tsan=1 (`--tsan`) builds it with ThreadSanitizer instead; preload libtsan.
  'variables': { 'palisade_asan%': 0, 'palisade_tsan%': 0 },
  'targets': [
    {
      # The one file that includes V8's own headers, built in the C++ dialect they need
      # (C++20 from Node 22 on), which node-gyp's defaults give: the rest is Node-API
      # only, in C++17.
      'target_name': 'palisade_v8',
      'type': 'static_library',
      'sources': [ 'native/heap/heap_napi.cc' ],
      'include_dirs': [ 'native' ],
      'dependencies': [ "<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except" ],
      'defines': [ 'NAPI_VERSION=8', 'NODE_ADDON_API_DISABLE_DEPRECATED' ],
      'cflags_cc': [ '-Wall', '-Wextra', '-Wno-unused-parameter', '-fvisibility=hidden', '-fPIC' ],
      'conditions': [
        [ 'palisade_asan==1', { 'cflags_cc': [ '-fsanitize=address,undefined', '-fno-omit-frame-pointer' ] } ],
        [ 'palisade_tsan==1', { 'cflags_cc': [ '-fsanitize=thread', '-fno-omit-frame-pointer' ] } ],
      ],
    },
    {
      'target_name': 'palisade',
      'sources': [
        'native/addon.cc',
        'native/common/errors.cc',
        'native/heap/malloc_napi.cc',
        'native/selector/parser.cc',
        'native/selector/canonical.cc',
        'native/selector/selector_napi.cc',
        'native/labelindex/program.cc',
        'native/labelindex/filing.cc',
        'native/labelindex/label_index.cc',
        'native/labelindex/label_index_napi.cc',
        'native/nft/netlink.cc',
        'native/nft/batch.cc',
        'native/nft/dump.cc',
        'native/nft/elem_get.cc',
        'native/nft/nft_napi.cc',
        'native/rtnl/monitor.cc',
        'native/rtnl/rtnl_napi.cc',
        'native/rtnl/routes.cc',
        'native/rtnl/routes_napi.cc',
        'native/rtnl/links.cc',
        'native/rtnl/links_napi.cc',
        'native/rtnl/rules.cc',
        'native/rtnl/rules_napi.cc',
        'native/wg/wg.cc',
        'native/wg/wg_napi.cc',
        'native/ct/conntrack.cc',
        'native/ct/ct_napi.cc',
        'native/ipset/ipset.cc',
        'native/ipset/ipset_napi.cc',
        'native/xt/rule.cc',
        'native/xt/encode.cc',
        'native/xt/restore.cc',
        'native/iptc/legacy.cc',
        'native/iptc/nft.cc',
        'native/iptc/iptc_napi.cc',
        'native/render/rule_hashes.cc',
        'native/render/rule_hashes_napi.cc',
        'native/checksum/crc32c.cc',
        'native/checksum/crc32c_napi.cc',
      ],
      'include_dirs': [ 'native', '<!@(pkg-config --cflags-only-I libnftnl libmnl | sed s/-I//g)' ],
      'dependencies': [ "<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except", 'palisade_v8' ],
      'defines': [ 'NAPI_VERSION=8', 'NODE_ADDON_API_DISABLE_DEPRECATED' ],
      'cflags_cc': [ '-std=c++17', '-Wall', '-Wextra', '-Wno-unused-parameter', '-fvisibility=hidden' ],
      'libraries': [ '-lcrypto', '<!@(pkg-config --libs libnftnl libmnl libip4tc libip6tc)' ],
      'conditions': [
        [ 'palisade_asan==1', {
          'cflags_cc': [ '-fsanitize=address,undefined', '-fno-omit-frame-pointer', '-fno-sanitize-recover=undefined' ],
          'ldflags': [ '-fsanitize=address,undefined' ],
        } ],
        [ 'palisade_tsan==1', {
          'cflags_cc': [ '-fsanitize=thread', '-fno-omit-frame-pointer' ],
          'ldflags': [ '-fsanitize=thread' ],
        } ],
      ],
    },
  ],
}
