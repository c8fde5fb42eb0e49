// SPDX-License-Identifier: Apache-2.0
// libcni's result cache, so kubelet/containerd/CRI-O and `cni-all exec` read each other's
// state: <cacheDir>/results/<network>-<containerID>-<ifName>, JSON of kind "cniCacheV1" with the
// conflist bytes (base64, as Go marshals []byte), the attachment's netns, CNI_ARGS pairs,
// capability args and the ADD result. Directory 0700, files 0600, as libcni writes them.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace cni::runtime {

struct CachedAttachment {
    std::string container_id;
    std::string ifname;
    std::string network;
    std::string netns;
    std::string config;  // the conflist bytes
    std::vector<std::pair<std::string, std::string>> cni_args;
    std::string capability_args;  // a JSON object, or "" for none
    std::string result;           // the ADD result as JSON, or "" for none
};

std::string cache_path(const std::string& cache_dir, const std::string& network, const std::string& container_id,
                       const std::string& ifname);
Status write_cache(const std::string& cache_dir, const CachedAttachment& a);
// nullopt when there is no cache file for the attachment.
Result<std::optional<CachedAttachment>> read_cache(const std::string& path);
void remove_cache(const std::string& cache_dir, const std::string& network, const std::string& container_id,
                  const std::string& ifname);
// Every readable cniCacheV1 file of `network`.
std::vector<CachedAttachment> cached_attachments(const std::string& cache_dir, const std::string& network);

std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace cni::runtime
