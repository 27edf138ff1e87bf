// S3 object storage: s3://bucket/key names, read, listed and written with S3's REST calls over the
// HTTP layer (io/http.h), each request signed with AWS Signature Version 4 by libcurl
// (CURLOPT_AWS_SIGV4) and retried by its policy.
//
//   reads     ranged GETs (HttpFile: the first request gives the size), through the running
//             pipeline's disk cache when it has one, as http(s) objects are
//   listings  ListObjectsV2 of the pattern's folder (prefix and delimiter "/"), page after page
//             (continuation tokens); the last part of the pattern may hold wildcards (fnmatch)
//   writes    one PUT, or a multipart upload (parts of S3Options::part_bytes, doubling every 1,000
//             parts: s3_part_bytes) for larger objects;
//             an object appears only when complete, and an unfinished upload is aborted
//
// Settings come from the StorageContext's S3Options, field by field over the AWS environment
// (remote.h). Errors name the object, the endpoint and the bucket, and the server's error code and
// message (SignatureDoesNotMatch, NoSuchBucket, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/http.h"
#include "pipeprof/pipelines/storage_io.h"

namespace pipeprof::pipelines::io {

// True for s3:// names.
bool is_s3_url(const std::string& name);

struct S3Name {
  std::string bucket;
  std::string key;  // "" for the bucket itself
};
// s3://bucket/key. Throws IoError naming the name when it has no bucket.
S3Name parse_s3_name(const std::string& name);

// The settings in force: the options' fields, else the environment's, else the defaults.
struct S3Settings {
  std::string endpoint;  // scheme://host[:port][/path], no trailing '/'
  std::string region;
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  std::optional<bool> force_path_style;
  uint64_t part_bytes = 0;
};
S3Settings s3_settings_of(const S3Options& options);

// The HTTP URL of a bucket's object (`key` "": the bucket), with `query` (canonical: its
// parameters sorted by name, their values encoded with s3_encode) when not empty.
std::string s3_http_url(const S3Settings& settings, const std::string& bucket, const std::string& key,
                        const std::string& query = "");

// The size of part `number` (from 1) of a multipart upload whose parts start at `first_bytes`: it
// doubles every kS3PartsPerSize parts, up to S3's 5 GiB, so that S3's 10,000 parts hold objects
// beyond its 5 TiB limit (16 MiB parts alone stop at 160 GB).
inline constexpr uint64_t kS3MostParts = 10'000;
inline constexpr uint64_t kS3PartsPerSize = 1'000;
uint64_t s3_part_bytes(uint64_t first_bytes, uint64_t number);

// Percent-encodes as SigV4 wants it: all but A-Z a-z 0-9 - _ . ~ (and '/' when keep_slash).
std::string s3_encode(std::string_view text, bool keep_slash);

// An s3:// name's HTTP URL and the access that signs for its endpoint and names it in errors.
std::pair<std::string, HttpAccess> s3_request_for(const std::string& name, const HttpAccess& access);

struct S3Object {
  std::string key;
  uint64_t size = 0;
};
// The objects directly under `prefix` in `bucket` (ListObjectsV2 with delimiter "/"; "" : the
// bucket's top level), every page. Keys come URL-encoded (encoding-type=url, as AWS's SDKs ask, so
// that a key with characters XML cannot carry lists too) and are decoded where the reply says it
// encoded them. Folder markers (keys ending in "/", which consoles create for empty folders) are
// not objects of the folder and are left out. Throws IoError (a missing bucket: NoSuchBucket).
// s3_url_decode: the decoding, '+' a space as S3 encodes it.
std::vector<S3Object> list_s3(const std::string& bucket, const std::string& prefix,
                              const HttpAccess& access, int max_keys = 1000);
std::string s3_url_decode(std::string_view text);

// The s3:// names matching a pattern whose last part may hold wildcards (*, ?, [...]), sorted;
// match_s3_objects: with their sizes, from the same listing (a name without wildcards is
// returned as it is by match_s3, and looked up in its folder's listing by match_s3_objects).
std::vector<std::string> match_s3(const std::string& pattern, const HttpAccess& access);
std::vector<std::pair<std::string, uint64_t>> match_s3_objects(const std::string& pattern,
                                                               const HttpAccess& access);

// Creates an object for writing (storage_io.h's WritableFile).
std::unique_ptr<WritableFile> create_s3(const std::string& name, const HttpAccess& access);

// Creates a bucket (s3://bucket); one that exists and is this account's is not an error.
void create_s3_bucket(const std::string& name, const HttpAccess& access);

// The gist of an S3 error body: "<Code>: <Message>" ("" when it is not one).
std::string s3_error_gist(std::string_view body);

}  // namespace pipeprof::pipelines::io
