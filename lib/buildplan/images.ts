// SVC_IMAGE_MAP over a generated Dockerfile: the image each FROM starts from, and each image a
// COPY --from reads, becomes the operator's mapped reference (a mirror; local images in tests).
// The plan's `images` stay as written, so the API shows the official references. Stage names are
// never images, even when the map happens to have a key spelled like one.

const FROM = /^FROM (\S+)( AS (\S+))?$/;
const COPY_FROM = /^(COPY .*?--from=)(\S+)( .*)$/;

export function mapDockerfileImages(dockerfile: string, map: Readonly<Record<string, string>>): string {
  const stages = new Set<string>();
  const swap = (ref: string) => (stages.has(ref) ? ref : (map[ref] ?? ref));
  return dockerfile
    .split('\n')
    .map((line) => {
      const from = FROM.exec(line);
      if (from) {
        const out = `FROM ${swap(from[1]!)}${from[2] ?? ''}`;
        if (from[3]) stages.add(from[3]);
        return out;
      }
      const copy = COPY_FROM.exec(line);
      return copy ? `${copy[1]}${swap(copy[2]!)}${copy[3]}` : line;
    })
    .join('\n');
}
