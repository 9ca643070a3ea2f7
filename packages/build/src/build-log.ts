/**
 * Lines of the legacy builder's own framing around our Dockerfile (`Step 3/18 : RUN ...`,
 * ` ---> Running in 1a2b`, `Removing intermediate container`, `Successfully built`, unused
 * build-arg warnings): they describe our Dockerfile, not the repo, and would fill the progress
 * tail with our install script. The repo's install output (npm, pip, go ...) is everything else.
 */
const FRAMING = [
  /^Sending build context to Docker daemon\b/,
  /^Step \d+\/\d+ : /,
  /^ ---> /,
  /^Removing intermediate container [0-9a-f]+$/,
  /^Successfully (built [0-9a-f]+|tagged \S+)$/,
  /^\[Warning\] One or more build-args \[.*\] were not consumed$/,
  // The client's notice that the legacy builder is deprecated (three lines, or five with buildx).
  /^DEPRECATED: The legacy builder is deprecated\b/,
  /^\s+BuildKit is currently disabled; enable it by removing the DOCKER_BUILDKIT=0$/,
  /^\s+environment-variable\.$/,
  /^\s+Install the buildx component to build images with BuildKit:$/,
  /^\s+https:\/\/docs\.docker\.com\/go\/buildx\/$/,
];

/** Whether a (cleaned) line of `docker build` output is the builder's framing, not the install's. */
export function isBuilderFraming(line: string): boolean {
  return line.trim() === '' || FRAMING.some((pattern) => pattern.test(line));
}
