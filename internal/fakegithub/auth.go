package fakegithub

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type installation struct {
	id      int64
	account string
	// permissions the installation has accepted; nil: the app's.
	permissions map[string]string
}

type token struct {
	value          string
	installationID int64
	expires        time.Time
}

// AddInstallation installs the app on an account (user or organisation login). Tokens
// of this installation can reach every repository that account owns.
func (s *Server) AddInstallation(id int64, account string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installations[id] = &installation{id: id, account: account}
	s.ensureUserLocked(account)
}

// SetInstallationPermissions sets the permissions an installation has
// accepted, as when the app asked for more and the account's owner has not
// approved them yet.
func (s *Server) SetInstallationPermissions(id int64, perms map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inst, ok := s.installations[id]; ok {
		inst.permissions = maps.Clone(perms)
	}
}

// RemoveInstallation uninstalls the app; its tokens stop working and minting answers 404.
func (s *Server) RemoveInstallation(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.installations, id)
}

// IssuedTokens returns every installation token minted so far (for leak scans).
func (s *Server) IssuedTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issuedTokens...)
}

// ExpireTokens makes every token minted so far invalid, as if an hour had passed.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	past := s.now().Add(-time.Second)
	for _, t := range s.tokens {
		t.expires = past
	}
}

// MintToken creates an installation token directly (for tests that need git access
// without going through the API).
func (s *Server) MintToken(installationID int64) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.mintLocked(installationID)
	if err != nil {
		return "", err
	}
	return t.value, nil
}

func (s *Server) mintLocked(installationID int64) (*token, error) {
	if _, ok := s.installations[installationID]; !ok {
		return nil, fmt.Errorf("installation %d: %w", installationID, ErrNotFound)
	}
	v, err := randomToken("ghs_", 36)
	if err != nil {
		return nil, err
	}
	t := &token{value: v, installationID: installationID, expires: s.now().Add(s.opts.TokenTTL)}
	s.tokens[v] = t
	s.issuedTokens = append(s.issuedTokens, v)
	return t, nil
}

const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randomToken(prefix string, n int) (string, error) {
	var b strings.Builder
	b.WriteString(prefix)
	max := big.NewInt(int64(len(tokenAlphabet)))
	for range n {
		i, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("random token: %w", err)
		}
		b.WriteByte(tokenAlphabet[i.Int64()])
	}
	return b.String(), nil
}

// bearer extracts the credential of an "Authorization: Bearer|token <x>" header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, val, ok := strings.Cut(h, " ")
	if !ok {
		return ""
	}
	switch strings.ToLower(scheme) {
	case "bearer", "token":
		return strings.TrimSpace(val)
	}
	return ""
}

// installationForRequest resolves a valid, unexpired installation token.
func (s *Server) installationForRequest(r *http.Request) (*installation, bool) {
	return s.installationForToken(bearer(r))
}

func (s *Server) installationForToken(v string) (*installation, bool) {
	if v == "" {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[v]
	if !ok || !s.now().Before(t.expires) {
		return nil, false
	}
	inst, ok := s.installations[t.installationID]
	return inst, ok
}

func (s *Server) verifyAppJWT(r *http.Request) error {
	tok := bearer(r)
	if tok == "" || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		return errors.New("missing bearer JWT")
	}
	j, err := parseJWT(tok)
	if err != nil {
		return err
	}
	return j.verify(&s.key.PublicKey, s.opts.AppID, s.opts.Now())
}

// jwt is a parsed, not yet verified, compact JWS.
type jwt struct {
	alg          string
	iss          string
	iat, exp     int64
	signingInput string
	signature    []byte
}

// parseJWT splits and decodes a compact JWS with an RS256-style header and the
// iss/iat/exp claims GitHub requires of an app JWT.
func parseJWT(tok string) (*jwt, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, errors.New("jwt: want 3 parts")
	}
	hdrJSON, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, fmt.Errorf("jwt header: %w", err)
	}
	claimsJSON, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("jwt claims: %w", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, fmt.Errorf("jwt signature: %w", err)
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(hdrJSON, &hdr); err != nil {
		return nil, fmt.Errorf("jwt header: %w", err)
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat json.Number     `json:"iat"`
		Exp json.Number     `json:"exp"`
	}
	dec := json.NewDecoder(bytes.NewReader(claimsJSON))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil {
		return nil, fmt.Errorf("jwt claims: %w", err)
	}
	j := &jwt{alg: hdr.Alg, signingInput: parts[0] + "." + parts[1], signature: sig}
	var issStr string
	var issNum json.Number
	switch {
	case json.Unmarshal(claims.Iss, &issStr) == nil:
		j.iss = issStr
	case json.Unmarshal(claims.Iss, &issNum) == nil:
		j.iss = issNum.String()
	default:
		return nil, errors.New("jwt: iss missing")
	}
	if j.iat, err = numericDate(claims.Iat); err != nil {
		return nil, fmt.Errorf("jwt iat: %w", err)
	}
	if j.exp, err = numericDate(claims.Exp); err != nil {
		return nil, fmt.Errorf("jwt exp: %w", err)
	}
	return j, nil
}

func numericDate(n json.Number) (int64, error) {
	if n == "" {
		return 0, errors.New("missing")
	}
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil {
		return 0, err
	}
	return int64(f), nil
}

// verify checks signature, issuer and GitHub's time rules: not expired, issued not in
// the future (60 s clock drift allowed), and exp at most 10 minutes ahead.
func (j *jwt) verify(pub *rsa.PublicKey, appID int64, now time.Time) error {
	if j.alg != "RS256" {
		return fmt.Errorf("jwt: alg %q, want RS256", j.alg)
	}
	sum := sha256.Sum256([]byte(j.signingInput))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], j.signature); err != nil {
		return fmt.Errorf("jwt signature: %w", err)
	}
	if j.iss != strconv.FormatInt(appID, 10) {
		return fmt.Errorf("jwt: iss %q is not app %d", j.iss, appID)
	}
	t := now.Unix()
	if j.exp <= t {
		return errors.New("jwt: expired")
	}
	if j.iat > t+60 {
		return errors.New("jwt: issued in the future")
	}
	if j.exp > t+11*60 || j.exp-j.iat > 11*60 {
		return errors.New("jwt: exp too far in the future")
	}
	return nil
}
