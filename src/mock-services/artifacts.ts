import { json, reject, type MockRequest, type MockRoute } from './http.js';
import { artifactBytes, type Artifact } from './render.js';
import type { World } from './world.js';

function find(world: World, request: MockRequest): Artifact {
  const artifact = world.artifacts.get(request.params.artifact_id!);
  if (!artifact) throw reject(404, 'artifact_not_found', `no artifact ${request.params.artifact_id}`);
  return artifact;
}

/** The files render jobs made: metadata with a download URL, the (mock) bytes, and their deletion. */
export function artifactRoutes(world: World): MockRoute[] {
  return [
    {
      method: 'GET',
      path: '/v1/artifacts/{artifact_id}',
      summary: "an artifact's metadata: format, filename, content_type, size_bytes, download_url",
      handle(request) {
        const artifact = find(world, request);
        return json(200, { ...artifact, download_url: `${world.url}/v1/artifacts/${artifact.artifact_id}/content` });
      },
    },
    {
      method: 'GET',
      path: '/v1/artifacts/{artifact_id}/content',
      summary: "an artifact's bytes (a short text standing for the Office file)",
      handle(request) {
        const artifact = find(world, request);
        return {
          status: 200,
          bytes: artifactBytes(artifact.render_job_id, artifact.format, artifact.pages),
          headers: {
            'content-type': artifact.content_type,
            'content-disposition': `attachment; filename="${artifact.filename}"`,
          },
        };
      },
    },
    {
      method: 'DELETE',
      path: '/v1/artifacts/{artifact_id}',
      summary:
        'delete an artifact (its metadata and bytes) → 204; idempotent: one already gone or never made is 204 too (§9.3)',
      handle(request) {
        world.artifacts.delete(request.params.artifact_id!);
        return { status: 204 };
      },
    },
  ];
}
