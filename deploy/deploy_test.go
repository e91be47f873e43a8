package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The parts of the Kubernetes objects the checks read.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		// StatefulSet
		Replicas    *int   `yaml:"replicas"`
		ServiceName string `yaml:"serviceName"`
		Selector    struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
			Spec struct {
				AccessModes []string `yaml:"accessModes"`
			} `yaml:"spec"`
		} `yaml:"volumeClaimTemplates"`
		// Service
		ClusterIP string `yaml:"clusterIP"`
		Ports     []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
	StringData map[string]string `yaml:"stringData"`
}

type podSpec struct {
	SecurityContext struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		FSGroup      int   `yaml:"fsGroup"`
	} `yaml:"securityContext"`
	AutomountServiceAccountToken *bool       `yaml:"automountServiceAccountToken"`
	Containers                   []container `yaml:"containers"`
	Volumes                      []struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName  string `yaml:"secretName"`
			DefaultMode int    `yaml:"defaultMode"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	StartupProbe   *probe `yaml:"startupProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
	SecurityContext struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		RunAsUser                *int  `yaml:"runAsUser"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Privileged               *bool `yaml:"privileged"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

func (c container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func loadK8s(t *testing.T) []k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var out []k8sObject
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "" {
				t.Fatalf("%s: a document without kind", f)
			}
			out = append(out, o)
		}
	}
	return out
}

func find(objs []k8sObject, kind, name string) *k8sObject {
	for i := range objs {
		if objs[i].Kind == kind && (name == "" || objs[i].Metadata.Name == name) {
			return &objs[i]
		}
	}
	return nil
}

func TestKubernetesManifests(t *testing.T) {
	objs := loadK8s(t)
	sts := find(objs, "StatefulSet", "")
	if sts == nil {
		t.Fatal("no StatefulSet")
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
		t.Errorf("replicas %v, want exactly 1 (bbolt has one writer)", sts.Spec.Replicas)
	}
	if headless := find(objs, "Service", sts.Spec.ServiceName); headless == nil || headless.Spec.ClusterIP != "None" {
		t.Errorf("serviceName %q is not a headless Service in the manifests", sts.Spec.ServiceName)
	}
	for k, v := range sts.Spec.Selector.MatchLabels {
		if sts.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod labels", k, v)
		}
	}
	pod := sts.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod gets a service account token it does not need")
	}
	var bot *container
	for i := range pod.Containers {
		if pod.Containers[i].Name == "selfcode" {
			bot = &pod.Containers[i]
		}
	}
	if bot == nil {
		t.Fatal("no selfcode container")
	}
	if !slices.Equal(bot.Args[:1], []string{"serve"}) {
		t.Errorf("args %v", bot.Args)
	}
	probes := map[string]*probe{"liveness": bot.LivenessProbe, "readiness": bot.ReadinessProbe}
	wantPath := map[string]string{"liveness": "/healthz", "readiness": "/readyz"}
	for name, p := range probes {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != wantPath[name] {
			t.Errorf("%s probe %+v, want GET %s", name, p, wantPath[name])
			continue
		}
		if p.HTTPGet.Port != "http" && p.HTTPGet.Port != 8080 {
			t.Errorf("%s probe port %v, want the public listener", name, p.HTTPGet.Port)
		}
	}
	dataDir, ok := bot.env("SELFCODE_DATA_DIR")
	if !ok {
		t.Fatal("SELFCODE_DATA_DIR not set")
	}
	mounted := map[string]string{}
	for _, m := range bot.VolumeMounts {
		mounted[m.MountPath] = m.Name
	}
	if mounted[dataDir] == "" {
		t.Errorf("the data dir %s is not a mounted volume", dataDir)
	}
	claim := false
	for _, c := range sts.Spec.VolumeClaimTemplates {
		if c.Metadata.Name == mounted[dataDir] && slices.Equal(c.Spec.AccessModes, []string{"ReadWriteOnce"}) {
			claim = true
		}
	}
	if !claim {
		t.Errorf("the data volume %q is not a ReadWriteOnce volume claim template", mounted[dataDir])
	}
	sc := bot.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Error("the selfcode container may run as root")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		!slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) || (sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("the selfcode container is not locked down: %+v", sc)
	}
	// Credentials come from the Secret, as a read-only config file.
	secret := find(objs, "Secret", "")
	if secret == nil {
		t.Fatal("no Secret")
	}
	if _, ok := secret.StringData["selfcode-app.yml"]; !ok {
		t.Error("the Secret has no selfcode-app.yml key")
	}
	for v, s := range secret.StringData {
		if s != "" {
			t.Errorf("the committed Secret holds a value for %s", v)
		}
	}
	var credMount string
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret.Metadata.Name {
			credMount = v.Name
			if v.Secret.DefaultMode&0o007 != 0 {
				t.Errorf("secret files are world-readable: %o", v.Secret.DefaultMode)
			}
		}
	}
	configFile := bot.Args[len(bot.Args)-1]
	okMount := false
	for _, m := range bot.VolumeMounts {
		if m.Name == credMount && m.ReadOnly && strings.HasPrefix(configFile, m.MountPath+"/") {
			okMount = true
		}
	}
	if credMount == "" || !okMount || !slices.Contains(bot.Args, "--config") {
		t.Errorf("serve does not read --config from the Secret (args %v)", bot.Args)
	}
	for _, e := range bot.Env {
		if strings.Contains(e.Name, "KEY") || strings.Contains(e.Name, "SECRET") {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s is not taken from a Secret", e.Name)
			}
		}
	}
	// Webhooks reach the public port; the admin port is fenced.
	if svc := find(objs, "Service", "selfcode"); svc == nil || len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].TargetPort != "http" {
		t.Error("no Service for webhooks on the http port")
	}
	if np := find(objs, "NetworkPolicy", ""); np == nil {
		t.Error("no NetworkPolicy fencing the admin port")
	}
}

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		Volumes     []string          `yaml:"volumes"`
		Secrets     []string          `yaml:"secrets"`
		Networks    []string          `yaml:"networks"`
		User        string            `yaml:"user"`
		ReadOnly    bool              `yaml:"read_only"`
		Privileged  bool              `yaml:"privileged"`
		CapDrop     []string          `yaml:"cap_drop"`
		Healthcheck map[string]any    `yaml:"healthcheck"`
	} `yaml:"services"`
	Volumes  map[string]any `yaml:"volumes"`
	Secrets  map[string]any `yaml:"secrets"`
	Networks map[string]struct {
		Internal bool `yaml:"internal"`
	} `yaml:"networks"`
}

func TestCompose(t *testing.T) {
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	bot, ok := c.Services["selfcode"]
	if !ok {
		t.Fatal("no selfcode service")
	}
	dataDir := bot.Environment["SELFCODE_DATA_DIR"]
	persistent := false
	for _, v := range bot.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		if strings.HasPrefix(dst, dataDir) && dst == dataDir {
			if _, named := c.Volumes[src]; named {
				persistent = true
			}
		}
		if strings.Contains(v, "docker.sock") {
			t.Errorf("the bot mounts the Docker socket: %s", v)
		}
	}
	if dataDir == "" || !persistent {
		t.Errorf("the data dir %q is not on a named volume: %v", dataDir, bot.Volumes)
	}
	proxyHost := strings.TrimPrefix(bot.Environment["DOCKER_HOST"], "tcp://")
	proxyName, _, _ := strings.Cut(proxyHost, ":")
	proxy, ok := c.Services[proxyName]
	if !ok {
		t.Fatalf("DOCKER_HOST %q is not a service of the file", bot.Environment["DOCKER_HOST"])
	}
	if !slices.Contains(proxy.Volumes, "/var/run/docker.sock:/var/run/docker.sock:ro") {
		t.Errorf("the proxy does not hold the socket read-only: %v", proxy.Volumes)
	}
	for _, off := range []string{"BUILD", "COMMIT", "SWARM", "SECRETS", "PLUGINS", "SYSTEM", "AUTH"} {
		if proxy.Environment[off] != "0" {
			t.Errorf("the proxy allows %s", off)
		}
	}
	for _, on := range []string{"CONTAINERS", "EXEC", "IMAGES", "VOLUMES", "POST"} {
		if proxy.Environment[on] != "1" {
			t.Errorf("the proxy refuses %s, which the sandbox needs", on)
		}
	}
	internal := false
	for _, n := range proxy.Networks {
		if c.Networks[n].Internal {
			internal = true
		}
	}
	if !internal || len(proxy.Ports) != 0 {
		t.Error("the proxy is reachable from outside its internal network")
	}
	for _, p := range bot.Ports {
		if strings.HasSuffix(p, ":9090") && !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("the admin port is published beyond loopback: %s", p)
		}
	}
	if bot.User == "" || strings.HasPrefix(bot.User, "0") || !bot.ReadOnly || bot.Privileged || !slices.Equal(bot.CapDrop, []string{"ALL"}) {
		t.Errorf("the bot is not locked down: user %q read_only %v", bot.User, bot.ReadOnly)
	}
	if !slices.Contains(bot.Command, "--config") || len(bot.Secrets) == 0 {
		t.Errorf("credentials are not a secret file read with --config: %v", bot.Command)
	}
	if bot.Healthcheck == nil {
		t.Error("no health check")
	}
}

// TestComposeConfig asks Docker Compose itself, when installed, to parse
// both variants (no image is pulled).
func TestComposeConfig(t *testing.T) {
	var argv []string
	if p, err := exec.LookPath("docker-compose"); err == nil {
		argv = []string{p}
	} else if p, err := exec.LookPath("docker"); err == nil && exec.Command(p, "compose", "version").Run() == nil {
		argv = []string{p, "compose"}
	} else {
		t.Skip("neither docker-compose nor docker compose is installed")
	}
	for _, files := range [][]string{{"docker-compose.yml"}, {"docker-compose.yml", "docker-compose.dind.yml"}} {
		args := append([]string(nil), argv[1:]...)
		for _, f := range files {
			args = append(args, "-f", f)
		}
		args = append(args, "config", "--quiet")
		cmd := exec.Command(argv[0], args...)
		cmd.Env = append(os.Environ(), "SELFCODE_LLM_API_KEY=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%v: %v\n%s", files, err, out)
		}
	}
}

// TestKustomizeBuild renders the manifests with kubectl's built-in
// kustomize when kubectl is installed (offline).
func TestKustomizeBuild(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	out, err := exec.Command(kubectl, "kustomize", "k8s").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("kind: StatefulSet")) || !bytes.Contains(out, []byte("namespace: selfcode")) {
		t.Errorf("unexpected rendering:\n%s", out)
	}
}

// stage is one FROM … section of a Dockerfile.
type stage struct {
	from  string
	lines []string
}

func dockerStages(t *testing.T, path string) []stage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []stage
	sc := bufio.NewScanner(f)
	cont := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line, cont = cont+line, ""
		if strings.HasPrefix(strings.ToUpper(line), "FROM ") {
			stages = append(stages, stage{from: line})
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
		}
	}
	return stages
}

func TestDockerfile(t *testing.T) {
	stages := dockerStages(t, "Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a multi-stage build", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	joined := func(s stage) string { return strings.Join(s.lines, "\n") }
	if !strings.Contains(joined(build), "CGO_ENABLED=0") || !strings.Contains(joined(build), "go build") {
		t.Error("the build stage does not build a static binary (CGO_ENABLED=0 go build)")
	}
	fin := joined(final)
	if !strings.Contains(fin, "COPY --from=build /out/selfcode") {
		t.Error("the final stage does not take the binary from the build stage")
	}
	if !strings.Contains(fin, "install") || !strings.Contains(fin, " git") {
		t.Error("the final stage has no git")
	}
	var user string
	for _, l := range final.lines {
		if strings.HasPrefix(l, "USER ") {
			user = strings.TrimPrefix(l, "USER ")
		}
	}
	if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("the final stage runs as %q, want a non-root user", user)
	}
	if !strings.Contains(fin, `ENTRYPOINT ["/usr/local/bin/selfcode"]`) || !strings.Contains(fin, `CMD ["serve"]`) {
		t.Error("the image does not run selfcode serve")
	}
	ignore, err := os.ReadFile("Dockerfile.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"*.pem", "selfcode-app.yml", "*.db"} {
		if !strings.Contains(string(ignore), secret) {
			t.Errorf("the build context does not exclude %s", secret)
		}
	}
}

// offlineRecipe is what build-offline.sh puts in the image: the packages
// (debootstrap's --include and the toolchains apt-get installs), and the
// ENV and LABEL lines of its docker import.
func offlineRecipe(t *testing.T) (packages []string, env, labels map[string]string, user string) {
	t.Helper()
	data, err := os.ReadFile("sandbox/build-offline.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	env, labels = map[string]string{}, map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, `packages="`); ok {
			packages = append(packages, strings.Split(strings.TrimSuffix(v, `"`), ",")...)
		}
		if v, ok := strings.CutPrefix(line, `toolchains="`); ok {
			packages = append(packages, strings.Fields(strings.TrimSuffix(v, `"`))...)
		}
		for _, q := range []string{`--change '`, `--change "`} {
			v, ok := strings.CutPrefix(line, q)
			if !ok {
				continue
			}
			v = strings.TrimSuffix(strings.TrimSuffix(v, ` \`), q[len(q)-1:])
			if kv, ok := strings.CutPrefix(v, "ENV "); ok {
				k, val, _ := strings.Cut(kv, "=")
				env[k] = val
			}
			if kv, ok := strings.CutPrefix(v, "LABEL "); ok {
				k, val, _ := strings.Cut(kv, "=")
				labels[k] = val
			}
		}
		if v, ok := strings.CutPrefix(line, `echo "sandbox:x:$sandbox_uid:$sandbox_gid:`); ok {
			user = "sandbox:x:10001:10001:" + strings.SplitN(v, `"`, 2)[0]
		}
	}
	slices.Sort(packages)
	return packages, env, labels, user
}

// The Dockerfile (the registry path) and build-offline.sh (the offline
// path) make the same image: the same packages, Go toolchain, user,
// environment, labels, release file and warmed /cache.
func TestSandboxRecipesMatch(t *testing.T) {
	packages, env, labels, user := offlineRecipe(t)
	if len(packages) < 10 || len(env) < 10 || labels["io.selfcode.cache"] != "/cache" || user == "" {
		t.Fatalf("could not read build-offline.sh: packages %v env %v labels %v user %q", packages, env, labels, user)
	}
	stages := dockerStages(t, "sandbox/Dockerfile")
	final := stages[len(stages)-1]
	var dpackages []string
	denv, dlabels := map[string]string{}, map[string]string{}
	body := strings.Join(final.lines, "\n")
	for _, l := range final.lines {
		switch {
		case strings.HasPrefix(l, "RUN apt-get update"):
			_, list, ok := strings.Cut(l, "--no-install-recommends")
			if !ok {
				t.Fatalf("apt-get install without --no-install-recommends: %s", l)
			}
			list, _, _ = strings.Cut(list, ">/dev/null")
			dpackages = strings.Fields(list)
		case strings.HasPrefix(l, "ENV "), strings.HasPrefix(l, "LABEL "):
			into := denv
			if strings.HasPrefix(l, "LABEL ") {
				into = dlabels
			}
			for _, kv := range strings.Fields(l)[1:] {
				k, v, _ := strings.Cut(kv, "=")
				into[k] = v
			}
		}
	}
	slices.Sort(dpackages)
	if !slices.Equal(dpackages, packages) {
		t.Errorf("packages differ:\n  Dockerfile       %v\n  build-offline.sh %v", dpackages, packages)
	}
	for k, v := range env {
		if denv[k] != v {
			t.Errorf("ENV %s: Dockerfile %q, build-offline.sh %q", k, denv[k], v)
		}
	}
	for k := range denv {
		if _, ok := env[k]; !ok {
			t.Errorf("ENV %s only in the Dockerfile", k)
		}
	}
	for k, v := range labels {
		if k == "io.selfcode.recipe" {
			if dlabels[k] != "${RECIPE}" {
				t.Errorf("the Dockerfile's recipe label is %q, want the RECIPE build argument", dlabels[k])
			}
			continue
		}
		if dlabels[k] != v {
			t.Errorf("LABEL %s: Dockerfile %q, build-offline.sh %q", k, dlabels[k], v)
		}
	}
	for _, want := range []string{
		"COPY --from=go /usr/local/go /usr/local/go", // the Go toolchain where the offline build copies it
		`echo "` + user + `" >>/etc/passwd`,
		"chown 10001:10001 /work /cache",
		">/etc/selfcode-sandbox-release",
		"USER 10001:10001",
		// /cache warmed as the sandbox user, offline, with the PATH the offline build gives it
		"setpriv --reuid=10001 --regid=10001 --clear-groups env -i PATH=/usr/local/go/bin:/usr/bin:/bin /bin/sh /usr/local/lib/selfcode/warm.sh",
		"WORKDIR /work",
		`CMD ["/bin/sh"]`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	script, err := os.ReadFile("sandbox/build-offline.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), `chroot --userspec="$sandbox_uid:$sandbox_gid" "$rootfs" /usr/bin/env -i \
	PATH=/usr/local/go/bin:/usr/bin:/bin /tmp/warm.sh`) {
		t.Error("build-offline.sh no longer warms /cache as the sandbox user with PATH=/usr/local/go/bin:/usr/bin:/bin")
	}
	for _, s := range stages {
		for _, l := range s.lines {
			if strings.HasPrefix(l, "RUN --mount") || strings.Contains(l, "--chmod") || strings.Contains(l, "--link") {
				t.Errorf("BuildKit-only instruction (selfcode builds with the classic builder): %s", l)
			}
		}
	}
}

type workflow struct {
	On struct {
		Push struct {
			Tags []string `yaml:"tags"`
		} `yaml:"push"`
	} `yaml:"on"`
	Jobs map[string]struct {
		Needs       []string          `yaml:"needs"`
		Permissions map[string]string `yaml:"permissions"`
		Steps       []struct {
			ID   string            `yaml:"id"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// The release workflow builds the binaries with the script the dry run
// uses, pushes both images to ghcr.io, bakes the sandbox image's digest
// into the server image, and names both digests in the release notes.
func TestReleaseWorkflow(t *testing.T) {
	data, err := os.ReadFile("../.github/workflows/release.yml")
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.On.Push.Tags, []string{"v*"}) {
		t.Errorf("runs on tags %v, want v*", w.On.Push.Tags)
	}
	all := string(data)
	if !strings.Contains(all, "deploy/release/build-binaries.sh \"$GITHUB_REF_NAME\" dist") {
		t.Error("the binaries are not built with deploy/release/build-binaries.sh")
	}
	images := w.Jobs["images"]
	if images.Permissions["packages"] != "write" {
		t.Error("the images job cannot push packages")
	}
	builds := map[string]map[string]string{}
	for _, s := range images.Steps {
		if strings.HasPrefix(s.Uses, "docker/build-push-action@") {
			builds[s.ID] = s.With
		}
		if s.ID == "names" && (!strings.Contains(s.Run, "ghcr.io/$owner/selfcode-sandbox") || !strings.Contains(s.Run, "ghcr.io/$owner/selfcode\"")) {
			t.Errorf("the images are not named on ghcr.io: %s", s.Run)
		}
	}
	sandbox, server := builds["sandbox"], builds["server"]
	if sandbox["context"] != "deploy/sandbox" || server["file"] != "deploy/Dockerfile" {
		t.Fatalf("image builds %v", builds)
	}
	for _, b := range []map[string]string{sandbox, server} {
		if b["push"] != "true" || b["platforms"] != "linux/amd64,linux/arm64" {
			t.Errorf("build %v does not push both platforms", b)
		}
	}
	if !strings.Contains(server["build-args"], "SANDBOX_IMAGE=${{ steps.names.outputs.sandbox }}:${{ github.ref_name }}@${{ steps.sandbox.outputs.digest }}") {
		t.Errorf("the server image's sandbox is not the released one, by digest: %q", server["build-args"])
	}
	release := w.Jobs["release"]
	if !slices.Equal(release.Needs, []string{"binaries", "images"}) || release.Permissions["contents"] != "write" {
		t.Errorf("release job: needs %v, permissions %v", release.Needs, release.Permissions)
	}
	notes := ""
	for _, s := range release.Steps {
		notes += s.Run
	}
	for _, want := range []string{"$SERVER@$SERVER_DIGEST", "$SANDBOX@$SANDBOX_DIGEST", "cat dist/SHA256SUMS", "gh release create", "dist/*"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the release step lacks %q", want)
		}
	}
	// The server image's default sandbox image is the build argument.
	stages := dockerStages(t, "Dockerfile")
	final := strings.Join(stages[len(stages)-1].lines, "\n")
	if !strings.Contains(final, "ARG SANDBOX_IMAGE=") || !strings.Contains(final, "SELFCODE_SANDBOX_IMAGE=${SANDBOX_IMAGE}") {
		t.Error("deploy/Dockerfile does not set SELFCODE_SANDBOX_IMAGE from the SANDBOX_IMAGE argument")
	}
	script, err := os.ReadFile("release/build-binaries.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), `targets="${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}"`) ||
		!strings.Contains(string(script), "CGO_ENABLED=0") || !strings.Contains(string(script), "SHA256SUMS") {
		t.Error("build-binaries.sh does not build static linux and darwin binaries for amd64 and arm64 with SHA256SUMS")
	}
}
