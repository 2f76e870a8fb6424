# Dockerfile - the gpu-admission container image: one dynamically linked C binary on debian:12-slim.
#
# Build stage: Debian 12 with the -dev packages (the same list as scripts/setup.sh build).
# Runtime stage: debian:12-slim plus EXACTLY the shared libraries the binary links, as Debian
# packages. The rule for that list (checked by test/chart/test_image.py against `ldd` of the
# real built binary):
#   runtime packages = { the Debian package owning each library ldd resolves }
#                      minus { Essential: yes packages and everything they depend on }
# Those are in every Debian image (dpkg itself needs them: libc6, libgcc-s1, ...). Everything
# else is listed, even what apt happens to pull into debian:12-slim today (GnuTLS and its
# libraries), so the image does not depend on the base image's apt.
#
# docker build -t gpu-admission:0.1.0 .

FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libcjson-dev libyaml-dev libmicrohttpd-dev \
      libssl-dev libgnutls28-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY include/ include/
COPY src/ src/
# The test tree is not needed (and its areas look for test tools): an empty test/ keeps the
# top-level CMakeLists.txt happy.
RUN mkdir -p test && : > test/CMakeLists.txt \
 && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build build --target gpu-admission -j"$(nproc)" \
 && strip build/gpu-admission \
 && build/gpu-admission version

FROM debian:12-slim
# runtime packages (test/chart/test_image.py keeps this list equal to what ldd needs)
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libcjson1 \
      libffi8 \
      libgnutls30 \
      libhogweed6 \
      libidn2-0 \
      libmicrohttpd12 \
      libnettle8 \
      libp11-kit0 \
      libssl3 \
      libtasn1-6 \
      libunistring2 \
      libyaml-0-2 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/gpu-admission /usr/local/bin/gpu-admission
# The shipped example policies, for `docker run ... check /usr/share/gpu-admission/policies`;
# the Helm chart mounts the real set at /etc/gpu-admission/policies.
COPY policies/ /usr/share/gpu-admission/policies/
# A numeric non-root user: no passwd entry needed, matches the chart's runAsUser.
USER 65532:65532
EXPOSE 8443 9090
ENTRYPOINT ["/usr/local/bin/gpu-admission"]
CMD ["serve", "--policies", "/etc/gpu-admission/policies", "--cert-dir", "/etc/gpu-admission/tls"]
